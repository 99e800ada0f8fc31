"""Type stubs of the Rust extension ``shoal_envs._core``: shoal's envs stepped directly."""

from typing import Any, Generic, Self, TypeVar

import numpy as np
import numpy.typing as npt

_F32 = npt.NDArray[np.float32]
_GoalObs = dict[str, _F32]  # keys: observation, achieved_goal, desired_goal
_C = TypeVar("_C", bound="_Config")

class _Config:
    """What every config class has; keyword arguments override the defaults."""

    def __init__(self, **kwargs: Any) -> None: ...
    def replace(self, **kwargs: Any) -> Self: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object) -> bool: ...

class WormConfig(_Config):
    """Settings of the worm (Rust ``WormConfig``); keyword arguments override the defaults."""

    links: int
    link_length: float
    link_radius: float
    density: float
    drag_tangential: float
    drag_normal: float
    max_joint_angle: float
    motor_stiffness: float
    motor_damping: float
    motor_max_torque: float
    control_dt: float
    substeps: int
    solver_iterations: int
    pgs_iterations: int
    ctrl_cost_weight: float
    max_episode_steps: int
    reset_noise_scale: float
    clip_actions: bool

class _ArmSettings(_Config):
    """The settings both arm tasks share (Rust ``ArmConfig``), readable by their bare names."""

    arm: dict[str, Any]
    max_episode_steps: int
    distance_threshold: float
    terminate_on_success: bool
    clip_actions: bool
    max_gripper_step: float
    max_finger_step: float
    control_dt: float
    substeps: int
    solver_iterations: int
    table_height: float
    table_half_extents: list[float]
    table_friction: float
    gripper: dict[str, Any]
    gripper_friction: float
    gripper_start: list[float]
    gripper_max_height: float

class ArmPushConfig(_ArmSettings):
    """Settings of the arm push task (Rust ``ArmPushConfig``)."""

    box_half_size: float
    box_mass: float
    box_friction: float
    object_range: float
    goal_range: float
    min_object_gripper_distance: float
    min_goal_distance: float

class BallToNetConfig(_ArmSettings):
    """Settings of the ball-to-net task (Rust ``BallToNetConfig``)."""

    ball_radius: float
    ball_mass: float
    ball_friction: float
    ball_restitution: float
    ball_damping: float
    ball_start_center: list[float]
    ball_start_half_extents: list[float]
    net_distance: list[float]
    net_lateral: float
    net_half_width: float
    net_wall_height: float

class UR5ReacherConfig(_Config):
    """Settings of the UR5 reacher (Rust ``Ur5ReacherConfig``)."""

    arm_model: str
    servo_gain: float
    max_servo_speed: list[float]
    max_torque: list[float]
    joint_damping: list[float]
    reject_goals: bool
    angle_threshold: float
    max_observed_speed: float
    control_dt: float
    substeps: int
    max_episode_steps: int
    terminate_on_success: bool
    clip_actions: bool

class PendulumConfig(_Config):
    """Settings of the inverted pendulum (Rust ``InvertedPendulumConfig``)."""

    length: float
    mass: float
    max_torque: float
    damping: float
    angle_threshold: float
    velocity_threshold: float
    control_dt: float
    substeps: int
    max_episode_steps: int
    terminate_on_success: bool
    clip_actions: bool
    goal_angle_range: list[float]
    goal_speed_range: list[float]

class _Env(Generic[_C]):
    """What every env class has. ``step`` takes a 1-D float32 array; errors raise ValueError / RuntimeError."""

    def __init__(self, config: _C | None = None, *, render: bool = False) -> None: ...
    @property
    def config(self) -> _C: ...
    @property
    def action_low(self) -> _F32: ...
    @property
    def action_high(self) -> _F32: ...
    @property
    def observation_dim(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def render(self) -> npt.NDArray[np.uint8]: ...
    def close(self) -> None: ...

class Worm(_Env[WormConfig]):
    """The Rust worm."""

    @property
    def x_position(self) -> float: ...
    def reset(self, seed: int | None = None) -> _F32: ...
    def step(self, action: _F32) -> tuple[_F32, float, bool, bool, dict[str, float]]: ...

class _GoalTask(_Env[_C]):
    """What every goal task has: its observations are ``_GoalObs`` dicts."""

    @property
    def goal_dim(self) -> int: ...
    def reset(self, seed: int | None = None) -> _GoalObs: ...
    def step(self, action: _F32) -> tuple[_GoalObs, float, bool, bool, dict[str, float]]: ...
    def compute_rewards(self, achieved: _F32, desired: _F32) -> _F32: ...

class ArmPush(_GoalTask[ArmPushConfig]):
    """The Rust arm push task."""

class BallToNet(_GoalTask[BallToNetConfig]):
    """The Rust ball-to-net task."""

class UR5Reacher(_GoalTask[UR5ReacherConfig]):
    """The Rust UR5 reacher."""

class Pendulum(_GoalTask[PendulumConfig]):
    """The Rust inverted pendulum."""

def registered_envs() -> list[tuple[str, str]]:
    """(Gymnasium id, shoal id) of every env in shoal's registry that has a Gymnasium id."""
    ...

def train(
    preset: str,
    *,
    env: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    out: str | None = None,
    resume: str | None = None,
    seed: int | None = None,
    episodes: int | None = None,
    steps: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> str:
    """Runs shoal's trainer in this process; returns the run directory."""
    ...

class TrainedPolicyCore:
    """A run's checkpoint loaded to act (``shoal_envs.load_policy`` wraps it)."""

    def __init__(self, run_dir: str, checkpoint: str = "best", seed: int = 0) -> None: ...
    def act(self, obs: _F32, deterministic: bool = True) -> _F32: ...
    @property
    def config(self) -> str: ...
    @property
    def eval_seed(self) -> int: ...
    @property
    def env_kind(self) -> str: ...
    @property
    def env_settings(self) -> str: ...
    @property
    def gym_id(self) -> str | None: ...
