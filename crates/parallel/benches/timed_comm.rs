//! What timing every collective costs: a barrier and an all-reduce of one
//! value on a single rank (which return at once, so only the call is
//! measured), through the communicator and through a [`TimedComm`] around
//! it — the wrapper every strategy run uses for its iteration profiles.

use std::hint::black_box;

use criterion::Criterion;
use shoal_rl_parallel::{Communicator, TimedComm, run_threads};

fn main() {
    run_threads(1, |comm: &dyn Communicator| {
        // No plots: criterion's SVG plotting needs system fonts.
        let mut criterion = Criterion::default().without_plots().configure_from_args();
        let timed = TimedComm::new(comm);
        let mut group = criterion.benchmark_group("collective_call");
        for (name, comm) in [("plain", comm), ("timed", &timed as &dyn Communicator)] {
            group.bench_function(format!("barrier/{name}"), |b| {
                b.iter(|| comm.barrier().unwrap())
            });
            let mut value = [1.0f32];
            group.bench_function(format!("all_reduce_1/{name}"), |b| {
                b.iter(|| comm.all_reduce_sum(black_box(&mut value)).unwrap())
            });
        }
        group.finish();
        black_box(timed.take());
        criterion.final_summary();
        Ok(())
    })
    .unwrap();
}
