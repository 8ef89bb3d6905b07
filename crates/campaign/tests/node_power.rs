#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! `[[node_power]]` tables: every kind read, secrets refused, the bad key named.

use powerlab_campaign::{Campaign, CampaignError, NodePowerKind, RedfishAuth, parse_str};

const HEAD: &str = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nduration_s = 1\n";

fn parse(extra: &str) -> Result<Campaign, CampaignError> {
    parse_str("t.toml", &format!("{HEAD}{extra}"))
}

#[test]
fn reads_every_kind() {
    let c = parse(
        "[[node_power]]\nname = \"bmc\"\nkind = \"redfish\"\nurl = \"https://10.0.0.5/\"\nuser = \"admin\"\npassword_env = \"POWERLAB_SECRET_BMC\"\nca_file = \"/etc/powerlab/bmc.pem\"\ninterval_ms = 500\n\
         [[node_power]]\nname = \"ipmi\"\nkind = \"ipmi\"\nargs = [\"-I\", \"lanplus\", \"-H\", \"10.0.0.5\", \"-U\", \"admin\", \"-E\"]\n\
         [[node_power]]\nname = \"meter\"\nkind = \"command\"\ncommand = [\"cat\", \"/run/watts\"]\n\
         [[node_power]]\nname = \"pdu\"\nkind = \"prometheus\"\nurl = \"http://pdu:9100/metrics\"\nmetric = \"pdu_outlet_watts\"\nlabels = { outlet = \"3\" }\n",
    )
    .unwrap();
    assert_eq!(c.node_power.len(), 4);
    assert_eq!(c.node_power[0].interval_ms, 500.0);
    assert_eq!(c.node_power[1].timeout_ms, 2000.0);
    match &c.node_power[0].kind {
        NodePowerKind::Redfish {
            url,
            auth,
            insecure_tls,
            ca_file,
            ..
        } => {
            assert_eq!(url, "https://10.0.0.5");
            assert_eq!(*auth, RedfishAuth::Basic);
            assert!(!insecure_tls);
            assert_eq!(ca_file.as_deref(), Some("/etc/powerlab/bmc.pem"));
        }
        k => panic!("{k:?}"),
    }
    match &c.node_power[3].kind {
        NodePowerKind::Prometheus { labels, .. } => {
            assert_eq!(labels, &vec![("outlet".to_string(), "3".to_string())]);
        }
        k => panic!("{k:?}"),
    }
}

#[test]
fn refuses_a_password_in_the_file() {
    let e = parse("[[node_power]]\nname = \"bmc\"\nkind = \"redfish\"\nurl = \"http://b\"\nuser = \"a\"\npassword = \"hunter2\"\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.password"));
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = parse("[[node_power]]\nname = \"i\"\nkind = \"ipmi\"\nargs = [\"-P\", \"x\"]\n")
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.args"));
    assert_eq!(e.line, 9);
    for a in ["-Phunter2", "-kSECRETKG", "-y0102abcd"] {
        let e = parse(&format!(
            "[[node_power]]\nname = \"i\"\nkind = \"ipmi\"\nargs = [\"{a}\"]\n"
        ))
        .unwrap_err();
        assert!(!e.to_string().contains(&a[2..]), "{e}");
    }
    let e = parse("[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"http://root:s3cret@bmc\"\nauth = \"none\"\n").unwrap_err();
    assert!(!e.to_string().contains("s3cret"), "{e}");
}

#[test]
fn names_the_bad_key() {
    let e = parse("[[node_power]]\nname = \"p\"\nkind = \"prometheus\"\nurl = \"http://x\"\nmetric = \"m\"\nchassis = \"1\"\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.chassis"));
    let e = parse("[[node_power]]\nname = \"p\"\nkind = \"snmp\"\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.kind"));
    let e = parse("[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"http://x\"\n")
        .unwrap_err();
    assert!(e.message.contains("needs `user`"), "{e}");
    let e = parse("[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"http://u:p@x\"\nauth = \"none\"\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.url"));
    let e = parse("[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"http://x\"\nauth = \"none\"\ninsecure_tls = true\n").unwrap_err();
    assert!(e.message.contains("https"), "{e}");
    let e = parse("[[node_power]]\nname = \"a\"\nkind = \"command\"\ncommand = [\"x\"]\n[[node_power]]\nname = \"a\"\nkind = \"command\"\ncommand = [\"y\"]\n").unwrap_err();
    assert!(e.message.contains("two node_power"), "{e}");
    let e = parse(
        "[[node_power]]\nname = \"a\"\nkind = \"command\"\ncommand = [\"x\"]\ninterval_ms = 10\n",
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.interval_ms"));
}

/// Issue 59, fault 1: a password was read from any variable and sent over
/// unverified TLS. Only a `POWERLAB_SECRET_*` variable is a secret
/// source, and a password never goes with `insecure_tls`.
#[test]
fn a_secret_comes_only_from_a_declared_variable_and_never_over_unverified_tls() {
    let bmc = |extra: &str| {
        parse(&format!(
            "[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"https://10.0.0.5\"\nuser = \"admin\"\n{extra}"
        ))
    };
    let e = bmc("password_env = \"AWS_SECRET_ACCESS_KEY\"\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.password_env"));
    assert!(e.message.contains("POWERLAB_SECRET_"), "{e}");
    let e = bmc("password_env = \"POWERLAB_SECRET_BMC\"\ninsecure_tls = true\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.insecure_tls"));
    assert!(e.message.contains("unverified TLS"), "{e}");
    let e = bmc("password_file = \"/etc/bmc\"\ninsecure_tls = true\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("node_power.insecure_tls"));
    // Verified against the BMC's own certificate: accepted.
    bmc("password_env = \"POWERLAB_SECRET_BMC\"\nca_file = \"/etc/bmc.pem\"\n").unwrap();
    // No credential: an unverified certificate is the user's choice.
    parse("[[node_power]]\nname = \"b\"\nkind = \"redfish\"\nurl = \"https://x\"\nauth = \"none\"\ninsecure_tls = true\n").unwrap();
}
