//! A Prometheus text endpoint, e.g. a PDU's exporter or a site meter:
//! the sum of the samples of one metric whose labels include the given
//! ones. Each matching series is kept as a supply, named by its labels.

use crate::http::{Tls, agent, get_text};
use powerlab_core::{MeterError, NodeMeter, NodeReading};
use std::time::Duration;

/// A Prometheus meter.
pub struct PrometheusMeter {
    name: String,
    url: String,
    metric: String,
    labels: Vec<(String, String)>,
    timeout: Duration,
    agent: Option<ureq::Agent>,
}

impl PrometheusMeter {
    /// From a `prometheus` source.
    pub fn new(
        name: &str,
        url: &str,
        metric: &str,
        labels: &[(String, String)],
        timeout: Duration,
    ) -> Self {
        PrometheusMeter {
            name: name.to_string(),
            url: url.to_string(),
            metric: metric.to_string(),
            labels: labels.to_vec(),
            timeout,
            agent: None,
        }
    }
}

/// A series' labels, as (name, value) pairs.
type Labels = Vec<(String, String)>;

/// Splits `name{a="1",b="x"} value [timestamp] [# exemplar]` into its
/// parts. The label set ends at its own closing brace (quotes respected),
/// so an OpenMetrics exemplar after the value is never read as the value.
fn parse_line(line: &str) -> Option<(&str, Labels, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(i) if line[..i].find(char::is_whitespace).is_none() => {
            let (labels, used) = parse_labels(&line[i + 1..])?;
            (&line[..i], labels, &line[i + 1 + used..])
        }
        _ => {
            let sp = line.find(char::is_whitespace)?;
            (&line[..sp], vec![], &line[sp..])
        }
    };
    let value = rest.split_whitespace().next()?.parse::<f64>().ok()?;
    Some((name.trim(), labels, value))
}

/// The labels after `{`, and how many bytes they took (closing brace
/// included).
fn parse_labels(s: &str) -> Option<(Labels, usize)> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    loop {
        while chars
            .peek()
            .is_some_and(|(_, c)| c.is_whitespace() || *c == ',')
        {
            chars.next();
        }
        let (start, c) = chars.next()?;
        if c == '}' {
            return Some((out, start + 1));
        }
        let mut end = start;
        for (i, c) in chars.by_ref() {
            if c == '=' {
                end = i;
                break;
            }
        }
        let key = s[start..end].trim().to_string();
        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            chars.next();
        }
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                (_, '\\') => match chars.next()? {
                    (_, 'n') => value.push('\n'),
                    (_, c2) => value.push(c2),
                },
                (_, '"') => break,
                (_, c) => value.push(c),
            }
        }
        out.push((key, value));
    }
}

/// Every sample of `metric` carrying all of `want`'s labels: (the
/// series' labels as `a=1,b=x`, value).
pub fn parse_metric(text: &str, metric: &str, want: &[(String, String)]) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(parse_line)
        .filter(|(n, labels, v)| {
            *n == metric && v.is_finite() && want.iter().all(|w| labels.contains(w))
        })
        .map(|(_, labels, v)| {
            let name = labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            (name, v)
        })
        .collect()
}

impl NodeMeter for PrometheusMeter {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "prometheus"
    }

    fn target(&self) -> String {
        self.url.clone()
    }

    fn read(&mut self) -> Result<NodeReading, MeterError> {
        if self.agent.is_none() {
            self.agent = Some(agent(self.timeout, Tls::Verify)?);
        }
        let Some(a) = &self.agent else {
            return Err(MeterError::Config("no HTTP agent".into()));
        };
        let text = get_text(a, &self.url, &[], self.timeout)?;
        let series = parse_metric(&text, &self.metric, &self.labels);
        let mut names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(MeterError::NoReading {
                target: self.url.clone(),
                detail: format!(
                    "the page lists the series `{}{{{}}}` twice",
                    self.metric, w[0]
                ),
            });
        }
        if self.labels.is_empty() && series.len() > 1 {
            return Err(MeterError::NoReading {
                target: self.url.clone(),
                detail: format!(
                    "`{}` has {} series ({}): name the ones to sum with `labels`",
                    self.metric,
                    series.len(),
                    names.join("; ")
                ),
            });
        }
        if series.is_empty() {
            return Err(MeterError::NoReading {
                target: self.url.clone(),
                detail: format!(
                    "no sample of `{}` with labels {:?}",
                    self.metric, self.labels
                ),
            });
        }
        let node_w = crate::plausible(series.iter().map(|(_, v)| v).sum(), &self.url)?;
        Ok(NodeReading {
            node_w,
            supplies_w: if series.len() > 1 { series } else { vec![] },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP pdu_outlet_watts Outlet power\n# TYPE pdu_outlet_watts gauge\n\
pdu_outlet_watts{pdu=\"a\",outlet=\"1\"} 812.5\n\
pdu_outlet_watts{pdu=\"a\",outlet=\"2\"} 790 1700000000000\n\
pdu_outlet_watts{pdu=\"b\",outlet=\"1\",note=\"x,y=\\\"z\\\"\"} 10\n\
pdu_outlet_watts_total 5\n\
pdu_inlet_watts 1650.25\n";

    #[test]
    fn sums_the_matching_series() {
        let a = parse_metric(PAGE, "pdu_outlet_watts", &[("pdu".into(), "a".into())]);
        assert_eq!(
            a,
            vec![
                ("pdu=a,outlet=1".to_string(), 812.5),
                ("pdu=a,outlet=2".to_string(), 790.0)
            ]
        );
        let b = parse_metric(
            PAGE,
            "pdu_outlet_watts",
            &[("note".into(), "x,y=\"z\"".into())],
        );
        assert_eq!(b.len(), 1);
        assert_eq!(
            parse_metric(PAGE, "pdu_inlet_watts", &[]),
            vec![(String::new(), 1650.25)]
        );
        assert!(parse_metric(PAGE, "pdu_outlet", &[]).is_empty());
        // An OpenMetrics exemplar after the value is not the value.
        let ex = "pdu_watts{pdu=\"a\",outlet=\"1\"} 800 # {trace_id=\"abc\"} 1.0\n";
        assert_eq!(
            parse_metric(ex, "pdu_watts", &[]),
            vec![("pdu=a,outlet=1".to_string(), 800.0)]
        );
        assert_eq!(
            parse_metric("m{a=\"}\"} 5\n", "m", &[]),
            vec![("a=}".to_string(), 5.0)]
        );
    }
}
