//! Floats as text with six significant digits, in the manner of C's `%g`.

/// `x` with six significant digits: plain notation when the decimal exponent lies in `-4..6`,
/// scientific (`1.5e-7`) otherwise; trailing zeros dropped (`2`, `0.125`). `-0` prints as `0`;
/// infinities as `inf`/`-inf`, NaN as `NaN`.
pub fn sig6(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        let decimals = (5 - exponent) as usize;
        trim_zeros(&format!("{x:.decimals$}"))
    } else {
        format!("{}e{exponent}", trim_zeros(mantissa))
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing follows it.
fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::sig6;

    #[test]
    fn six_significant_digits() {
        assert_eq!(sig6(1.0), "1");
        assert_eq!(sig6(-0.0), "0");
        assert_eq!(sig6(0.125), "0.125");
        assert_eq!(sig6(std::f64::consts::PI), "3.14159");
        assert_eq!(sig6(-123456.7), "-123457");
        assert_eq!(sig6(1234567.0), "1.23457e6");
        assert_eq!(sig6(0.000012345678), "1.23457e-5");
        assert_eq!(sig6(0.00012345678), "0.000123457");
        assert_eq!(sig6(9.9999996), "10");
        assert_eq!(sig6(f64::NEG_INFINITY), "-inf");
    }
}
