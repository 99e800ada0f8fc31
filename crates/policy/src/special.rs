//! Special functions burn lacks: lgamma, digamma, trigamma, and the Beta
//! distribution's log-density and entropy built on them (all `f64`).

use std::f64::consts::PI;

/// Lanczos coefficients (g = 7, n = 9), as in Numerical Recipes / Boost;
/// relative error below 1e-13 for positive arguments.
const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// `ln |Γ(x)|` for real `x` (Lanczos approximation, reflection for `x < 0.5`).
///
/// ```
/// let ln_sqrt_pi = std::f64::consts::PI.sqrt().ln();
/// assert!((shoal_rl_policy::lgamma(0.5) - ln_sqrt_pi).abs() < 1e-12);
/// ```
pub fn lgamma(x: f64) -> f64 {
    if x < 0.5 {
        // Γ(x)Γ(1−x) = π / sin(πx)
        return (PI / (PI * x).sin()).abs().ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = LANCZOS[0];
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + LANCZOS_G + 0.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// ψ(x) = d/dx ln Γ(x): recurrence up to x ≥ 10, then the asymptotic series.
///
/// ```
/// const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
/// assert!((shoal_rl_policy::digamma(1.0) + EULER_GAMMA).abs() < 1e-12);
/// ```
pub fn digamma(mut x: f64) -> f64 {
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    let mut acc = 0.0;
    if x < 0.0 {
        // ψ(1−x) − ψ(x) = π cot(πx)
        acc -= PI / (PI * x).tan();
        x = 1.0 - x;
    }
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv2 = 1.0 / (x * x);
    acc + x.ln()
        - 0.5 / x
        - inv2
            * (1.0 / 12.0
                - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (1.0 / 240.0 - inv2 / 132.0))))
}

/// ψ′(x), the derivative of [`digamma`], for `x > 0`.
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    acc + inv
        + 0.5 * inv2
        + inv * inv2 * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * (1.0 / 42.0 - inv2 / 30.0)))
}

/// `ln B(α, β)`, the log of the Beta function.
pub fn ln_beta(alpha: f64, beta: f64) -> f64 {
    lgamma(alpha) + lgamma(beta) - lgamma(alpha + beta)
}

/// Log-density of Beta(α, β) at `x ∈ (0, 1)`.
///
/// ```
/// // Beta(2, 2) has density 6x(1−x): at 0.5 that is 1.5.
/// assert!((shoal_rl_policy::beta_log_prob(0.5, 2.0, 2.0) - 1.5f64.ln()).abs() < 1e-12);
/// ```
pub fn beta_log_prob(x: f64, alpha: f64, beta: f64) -> f64 {
    (alpha - 1.0) * x.ln() + (beta - 1.0) * (1.0 - x).ln() - ln_beta(alpha, beta)
}

/// Differential entropy of Beta(α, β).
pub fn beta_entropy(alpha: f64, beta: f64) -> f64 {
    let total = alpha + beta;
    ln_beta(alpha, beta) - (alpha - 1.0) * digamma(alpha) - (beta - 1.0) * digamma(beta)
        + (total - 2.0) * digamma(total)
}

/// ∂/∂α and ∂/∂β of [`beta_log_prob`] at `x`: the score REINFORCE pushes
/// back through the network.
pub fn beta_log_prob_grad(x: f64, alpha: f64, beta: f64) -> (f64, f64) {
    let psi_total = digamma(alpha + beta);
    (
        x.ln() - digamma(alpha) + psi_total,
        (1.0 - x).ln() - digamma(beta) + psi_total,
    )
}

/// ∂/∂α and ∂/∂β of [`beta_entropy`].
pub fn beta_entropy_grad(alpha: f64, beta: f64) -> (f64, f64) {
    let tri_total = (alpha + beta - 2.0) * trigamma(alpha + beta);
    (
        -(alpha - 1.0) * trigamma(alpha) + tri_total,
        -(beta - 1.0) * trigamma(beta) + tri_total,
    )
}

/// One Beta(α, β) component as a policy-gradient loss needs it, with the
/// special functions its four parts share computed once: `ln Γ` and `ψ` of
/// α, β and α + β serve the log-density, its gradient and the entropy, so
/// this costs a third of calling [`beta_log_prob`], [`beta_log_prob_grad`],
/// [`beta_entropy`] and [`beta_entropy_grad`] apart, with the same values
/// bit for bit. `ψ′` (the entropy's gradient) is computed only when
/// `with_entropy_grad` is set: PPO needs it only under an entropy bonus.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BetaTerms {
    /// [`beta_log_prob`] at `x`.
    pub log_prob: f64,
    /// [`beta_log_prob_grad`] at `x`.
    pub log_prob_grad: (f64, f64),
    /// [`beta_entropy`].
    pub entropy: f64,
    /// [`beta_entropy_grad`], when asked for.
    pub entropy_grad: Option<(f64, f64)>,
}

impl BetaTerms {
    /// The terms of Beta(α, β) at `x ∈ (0, 1)`.
    ///
    /// ```
    /// use shoal_rl_policy::{BetaTerms, beta_entropy, beta_log_prob};
    /// let terms = BetaTerms::new(0.2, 2.0, 5.0, false);
    /// assert_eq!(terms.log_prob, beta_log_prob(0.2, 2.0, 5.0));
    /// assert_eq!(terms.entropy, beta_entropy(2.0, 5.0));
    /// assert_eq!(terms.entropy_grad, None);
    /// ```
    pub fn new(x: f64, alpha: f64, beta: f64, with_entropy_grad: bool) -> Self {
        let total = alpha + beta;
        let ln_b = ln_beta(alpha, beta);
        let (psi_alpha, psi_beta, psi_total) = (digamma(alpha), digamma(beta), digamma(total));
        let entropy_grad = with_entropy_grad.then(|| {
            let tri_total = (total - 2.0) * trigamma(total);
            (
                -(alpha - 1.0) * trigamma(alpha) + tri_total,
                -(beta - 1.0) * trigamma(beta) + tri_total,
            )
        });
        Self {
            log_prob: (alpha - 1.0) * x.ln() + (beta - 1.0) * (1.0 - x).ln() - ln_b,
            log_prob_grad: (
                x.ln() - psi_alpha + psi_total,
                (1.0 - x).ln() - psi_beta + psi_total,
            ),
            entropy: ln_b - (alpha - 1.0) * psi_alpha - (beta - 1.0) * psi_beta
                + (total - 2.0) * psi_total,
            entropy_grad,
        }
    }
}

#[cfg(test)]
// Reference values keep the digits their source (mpmath) gives, beyond f64's.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    fn assert_rel(got: f64, want: f64, tol: f64) {
        let err = if want == 0.0 {
            got.abs()
        } else {
            ((got - want) / want).abs()
        };
        assert!(err <= tol, "got {got}, want {want}, relative error {err}");
    }

    #[test]
    fn lgamma_matches_known_values() {
        // Γ(n) = (n−1)!
        assert_rel(lgamma(1.0), 0.0, 1e-12);
        assert_rel(lgamma(2.0), 0.0, 1e-12);
        assert_rel(lgamma(10.0), 362_880f64.ln(), 1e-12);
        assert_rel(lgamma(0.5), PI.sqrt().ln(), 1e-12);
        assert_rel(lgamma(1.5), (PI.sqrt() / 2.0).ln(), 1e-10);
        // Reference values from mpmath (30 digits).
        assert_rel(lgamma(0.1), 2.252_712_651_734_205_902, 1e-12);
        assert_rel(lgamma(3.7), 1.428_072_326_665_388_1, 1e-12);
        assert_rel(lgamma(100.0), 359.134_205_369_575_398_78, 1e-12);
        assert_rel(lgamma(1e-3), 6.907_178_885_383_853_8, 1e-9);
        assert_rel(lgamma(-0.5), (2.0 * PI.sqrt()).ln(), 1e-12);
    }

    #[test]
    fn digamma_matches_known_values() {
        const EULER: f64 = 0.577_215_664_901_532_860_6;
        assert_rel(digamma(1.0), -EULER, 1e-10);
        assert_rel(digamma(0.5), -EULER - 2.0 * 2f64.ln(), 1e-10);
        assert_rel(digamma(2.0), 1.0 - EULER, 1e-10);
        assert_rel(digamma(10.0), 2.251_752_589_066_721_1, 1e-10);
        assert_rel(digamma(0.1), -10.423_754_940_411_076_8, 1e-10);
        assert_rel(digamma(-0.5), 0.036_489_973_978_576_520_6, 1e-9);
        assert!(digamma(0.0).is_nan() && digamma(-2.0).is_nan());
    }

    #[test]
    fn trigamma_matches_known_values() {
        assert_rel(trigamma(1.0), PI * PI / 6.0, 1e-10);
        assert_rel(trigamma(0.5), PI * PI / 2.0, 1e-10);
        assert_rel(trigamma(3.5), 0.330_357_756_100_234_86, 1e-10);
    }

    #[test]
    fn beta_log_prob_and_entropy_match_closed_forms() {
        // Beta(1,1) is uniform: density 1, entropy 0.
        assert_rel(beta_log_prob(0.3, 1.0, 1.0), 0.0, 1e-12);
        assert_rel(beta_entropy(1.0, 1.0), 0.0, 1e-12);
        // Beta(2,5) at 0.2: 30·0.2·0.8⁴ = 2.4576
        assert_rel(beta_log_prob(0.2, 2.0, 5.0), 2.4576f64.ln(), 1e-12);
        // scipy.stats.beta(2, 5).entropy() = −0.4845307...
        assert_rel(beta_entropy(2.0, 5.0), -0.484_530_714_995_488_7, 1e-9);
    }

    #[test]
    fn analytic_gradients_match_finite_differences() {
        let (x, a, b, h) = (0.37, 2.3, 4.1, 1e-6);
        let (ga, gb) = beta_log_prob_grad(x, a, b);
        let fa = (beta_log_prob(x, a + h, b) - beta_log_prob(x, a - h, b)) / (2.0 * h);
        let fb = (beta_log_prob(x, a, b + h) - beta_log_prob(x, a, b - h)) / (2.0 * h);
        assert_rel(ga, fa, 1e-6);
        assert_rel(gb, fb, 1e-6);
        let (ea, eb) = beta_entropy_grad(a, b);
        let fa = (beta_entropy(a + h, b) - beta_entropy(a - h, b)) / (2.0 * h);
        let fb = (beta_entropy(a, b + h) - beta_entropy(a, b - h)) / (2.0 * h);
        assert_rel(ea, fa, 1e-6);
        assert_rel(eb, fb, 1e-6);
    }

    #[test]
    fn beta_terms_equal_the_separate_functions_bit_for_bit() {
        for &x in &[1e-6, 0.01, 0.37, 0.5, 0.93, 1.0 - 1e-6] {
            for &a in &[1.0, 1.001, 1.7, 3.2, 12.5, 250.0] {
                for &b in &[1.0, 1.3, 2.0, 9.9, 80.0] {
                    let terms = BetaTerms::new(x, a, b, true);
                    assert_eq!(terms.log_prob, beta_log_prob(x, a, b), "{x} {a} {b}");
                    assert_eq!(terms.log_prob_grad, beta_log_prob_grad(x, a, b));
                    assert_eq!(terms.entropy, beta_entropy(a, b));
                    assert_eq!(terms.entropy_grad, Some(beta_entropy_grad(a, b)));
                    assert_eq!(BetaTerms::new(x, a, b, false).entropy_grad, None);
                }
            }
        }
    }
}
