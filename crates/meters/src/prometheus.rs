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

/// Splits `name{a="1",b="x"} value [timestamp]` into its parts.
fn parse_line(line: &str) -> Option<(&str, Labels, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(i) => {
            let close = line[i..].rfind('}')? + i;
            (
                &line[..i],
                parse_labels(&line[i + 1..close])?,
                &line[close + 1..],
            )
        }
        None => {
            let sp = line.find(char::is_whitespace)?;
            (&line[..sp], vec![], &line[sp..])
        }
    };
    let value = rest.split_whitespace().next()?.parse::<f64>().ok()?;
    Some((name.trim(), labels, value))
}

fn parse_labels(s: &str) -> Option<Labels> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c2)) => value.push(c2),
                    None => return None,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                c => value.push(c),
            }
        }
        let end = end?;
        out.push((key, value));
        rest = after[end + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Some(out)
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
        if series.is_empty() {
            return Err(MeterError::NoReading {
                target: self.url.clone(),
                detail: format!(
                    "no sample of `{}` with labels {:?}",
                    self.metric, self.labels
                ),
            });
        }
        Ok(NodeReading {
            node_w: series.iter().map(|(_, v)| v).sum(),
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
    }
}
