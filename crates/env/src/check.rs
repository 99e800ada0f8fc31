//! The env checker ([`shoal_rl_core::check_env`], [`shoal_rl_core::check_goal_env`])
//! against this crate's envs and goal envs that break one rule each.

#[cfg(test)]
mod tests {
    use shoal_rl_core::{Env, GoalEnv, Result, Space, Step, check_goal_env};

    #[test]
    fn arm_tasks_pass_the_goal_env_checker() {
        use crate::{ArmPush, ArmPushConfig, BallToNet, BallToNetConfig};
        check_goal_env(|| ArmPush::new(ArmPushConfig::default()).unwrap()).unwrap();
        check_goal_env(|| BallToNet::new(BallToNetConfig::default()).unwrap()).unwrap();
    }

    #[test]
    fn every_env_can_move_to_a_worker_thread() {
        fn assert_send<T: Send + 'static>() {}
        assert_send::<crate::Worm>();
        assert_send::<crate::PointReach>();
        assert_send::<crate::PointGoal>();
    }

    /// Which rule of [`GoalEnv`] a [`BrokenGoal`] breaks.
    #[derive(Clone, Copy, Debug)]
    enum GoalFault {
        None,
        RewardOff,
        StatefulReward,
        BatchDisagrees,
        ExactIsNotSuccess,
        InfoLies,
        GoalTooWide,
    }

    /// [`crate::PointGoal`] with one goal-env rule broken.
    struct BrokenGoal {
        inner: crate::PointGoal,
        fault: GoalFault,
        /// Steps taken over the instance's life (never reset).
        steps: usize,
    }

    impl BrokenGoal {
        fn new(fault: GoalFault) -> Self {
            let cfg = crate::PointGoalConfig::default();
            BrokenGoal {
                inner: crate::PointGoal::new(cfg).unwrap(),
                fault,
                steps: 0,
            }
        }
    }

    impl Env for BrokenGoal {
        fn observation_space(&self) -> &Space {
            self.inner.observation_space()
        }
        fn action_space(&self) -> &Space {
            self.inner.action_space()
        }
        fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
            self.inner.reset(seed)
        }
        fn step(&mut self, action: &[f32]) -> Result<Step> {
            let mut step = self.inner.step(action)?;
            self.steps += 1;
            let (_, achieved, desired) = self.inner.split_obs(&step.obs);
            let (achieved, desired) = (achieved.to_vec(), desired.to_vec());
            match self.fault {
                GoalFault::RewardOff => step.reward -= 0.5,
                GoalFault::StatefulReward => {
                    step.reward = self.compute_reward(&achieved, &desired);
                }
                GoalFault::InfoLies => {
                    let flag = step.info.get("is_success").unwrap();
                    step.info.insert("is_success", 1.0 - flag);
                }
                _ => {}
            }
            Ok(step)
        }
    }

    impl GoalEnv for BrokenGoal {
        fn goal_dim(&self) -> usize {
            match self.fault {
                GoalFault::GoalTooWide => self.observation_space().dim(),
                _ => self.inner.goal_dim(),
            }
        }
        fn compute_reward(&self, achieved: &[f32], desired: &[f32]) -> f32 {
            let reward = self.inner.compute_reward(achieved, desired);
            match self.fault {
                // Once the env has stepped, the "same" reward is another
                // number: a fresh instance disagrees.
                GoalFault::StatefulReward if self.steps > 0 => reward - 1.0,
                _ => reward,
            }
        }
        fn compute_rewards(&self, achieved: &[f32], desired: &[f32]) -> Vec<f32> {
            let rows = achieved.len() / self.goal_dim();
            match self.fault {
                GoalFault::BatchDisagrees => vec![0.0; rows],
                _ => (0..rows)
                    .map(|i| {
                        let (a, d) = (i * 2..i * 2 + 2, i * 2..i * 2 + 2);
                        self.compute_reward(&achieved[a], &desired[d])
                    })
                    .collect(),
            }
        }
        fn is_success(&self, achieved: &[f32], desired: &[f32]) -> bool {
            match self.fault {
                GoalFault::ExactIsNotSuccess => false,
                _ => self.inner.is_success(achieved, desired),
            }
        }
    }

    fn goal_failure(fault: GoalFault) -> String {
        check_goal_env(|| BrokenGoal::new(fault)).unwrap_err()
    }

    #[test]
    fn check_goal_env_reports_each_broken_goal_rule() {
        check_goal_env(|| BrokenGoal::new(GoalFault::None)).unwrap();
        let off = goal_failure(GoalFault::RewardOff);
        assert!(
            off.starts_with("step 0: reward -1.5 but compute_reward"),
            "{off}"
        );
        assert!(
            goal_failure(GoalFault::StatefulReward)
                .ends_with("compute_reward depends on the environment's state"),
        );
        assert_eq!(
            goal_failure(GoalFault::BatchDisagrees),
            "compute_rewards disagrees with compute_reward row by row"
        );
        let lies = goal_failure(GoalFault::InfoLies);
        assert!(
            lies.starts_with("step 0: info is_success = 1 but"),
            "{lies}"
        );
        assert_eq!(
            goal_failure(GoalFault::ExactIsNotSuccess),
            "reaching the desired goal exactly is not a success"
        );
        let wide = goal_failure(GoalFault::GoalTooWide);
        assert!(wide.contains("does not fit the observation"), "{wide}");
    }
}
