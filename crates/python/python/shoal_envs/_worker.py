"""One worker process of a parallel run that ``shoal_envs.train`` started
on the processes backend: it rebuilds the run's env in this interpreter
from its Gymnasium id and trains as the rank the run gave it."""

from shoal_envs._core import _run_worker

if __name__ == "__main__":
    _run_worker()
