//! Campaign errors that point at the offending place in the file.

/// A problem in a campaign file, located by line and column.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{file}:{line}:{column}: {field_part}{message}{allowed_part}",
    field_part = field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default(),
    allowed_part = allowed.as_ref().map(|a| format!(" (allowed: {a})")).unwrap_or_default())]
pub struct CampaignError {
    /// File name as given by the user.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Dotted field path, when known (`phase[3].duty`).
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What would be accepted.
    pub allowed: Option<String>,
}

/// Converts a byte offset into 1-based line and column.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line, column)
}
