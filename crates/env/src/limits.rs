//! Upper bounds on every count in an env config, so that no setting can
//! make an env (or the learner storing its episodes) grow without limit.

use shoal_rl_core::{Error, Result};

/// Longest episode accepted (`max_episode_steps`): learners keep whole
/// episodes in memory.
pub const MAX_EPISODE_STEPS: usize = 1_000_000;
/// Most physics substeps or solver iterations per control step.
pub const MAX_SUBSTEPS: usize = 1_000;
/// Most links of a worm, and dimensions of the point toy task.
pub const MAX_BODY_PARTS: usize = 64;

/// `value` in `min..=max`, else an error naming `what` (`"worm: links"`).
pub(crate) fn check_count(what: &str, value: usize, min: usize, max: usize) -> Result<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{what} must be between {min} and {max}, got {value}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_outside_their_range_name_themselves() {
        assert!(check_count("x", 1, 1, 2).is_ok());
        assert!(check_count("x", 2, 1, 2).is_ok());
        let message = check_count("worm: links", 0, 2, 64)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("worm: links must be between 2 and 64, got 0"),
            "{message}"
        );
        assert!(check_count("x", 3, 1, 2).is_err());
    }
}
