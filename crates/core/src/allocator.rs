//! Allocator settings for a training process.
//!
//! Here in shoal-rl-core, not in the `shoal` binary's crate, so that every
//! program that trains with shoal's crates (the binary, the examples, a
//! user's own `main`, a crate's long-running tests) can make the same call.

/// Tells glibc's malloc to keep freed blocks in the process for reuse,
/// instead of handing them back to the kernel and asking for fresh zeroed
/// pages on the next allocation. Returns whether the settings took effect
/// (always `false` off Linux/glibc, where nothing is changed).
///
/// A training step allocates and frees tensors of a megabyte and more
/// thousands of times a second (batch 1 024 × 256 floats). glibc serves
/// such blocks above its mmap threshold with a new mapping, and returns a
/// freed heap top above its trim threshold to the kernel, so each one comes
/// back as newly faulted, zeroed pages: 20 `push-hac` episodes took 2.2
/// million page faults and 18–20 s of CPU time. With the mmap threshold at
/// its maximum (32 MiB) and the trim threshold at 1 GiB they took 2 500
/// page faults and 11 s; either setting alone saved little. The numbers
/// learned are the same bits: only where memory comes from changes.
///
/// Call it first thing in `main`, before any thread starts; the `shoal`
/// binary, the examples and the arm-push learning test do. Memory freed
/// during training then stays with the process until it exits, which is
/// what a training run wants.
pub fn keep_freed_memory_for_reuse() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // glibc's limit for M_MMAP_THRESHOLD on 64-bit targets.
        const MMAP_THRESHOLD_MAX: c_int = 32 << 20;
        unsafe extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        // SAFETY: mallopt only changes malloc's tuning parameters; it takes
        // malloc's own lock and is safe to call at any time.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
                && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_settings() {
        assert!(super::keep_freed_memory_for_reuse());
        // Large blocks still allocate, free and reallocate correctly.
        for _ in 0..3 {
            let block = vec![7u8; 8 << 20];
            assert_eq!(
                block.iter().map(|b| u64::from(*b)).sum::<u64>(),
                7 * (8 << 20)
            );
        }
    }
}
