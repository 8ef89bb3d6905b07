//! Counts in words for messages and reports: `1 GPU`, `8 GPUs`.

/// A count of GPUs in words: `1 GPU`, `8 GPUs`.
pub fn gpus(n: usize) -> String {
    if n == 1 {
        "1 GPU".into()
    } else {
        format!("{n} GPUs")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_gpu_is_singular() {
        assert_eq!(super::gpus(1), "1 GPU");
        assert_eq!(super::gpus(0), "0 GPUs");
        assert_eq!(super::gpus(8), "8 GPUs");
    }
}
