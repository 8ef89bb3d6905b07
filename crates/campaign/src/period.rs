//! The duty period a phase asks for and a rung runs, in milliseconds:
//! [`powerlab_core::units::PeriodMs`], serialized as the bare number
//! (`"period_ms": 500.0`), from the plan to the rung record.

pub use powerlab_core::units::PeriodMs;

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::units::ms_to_ns_f64;

    #[test]
    fn reads_and_writes_as_the_bare_number() {
        let p = PeriodMs(100.28);
        assert_eq!(toml::to_string(&[p]).ok(), toml::to_string(&[100.28]).ok());
        assert_eq!(format!("{p} {p:?}"), "100.28 100.28");
        assert_eq!(p.ns(), 100_280_000);
        assert_eq!(p.ns_f64(), ms_to_ns_f64(100.28));
    }
}
