//! docs/CONFIG.md against the code: every key the code reads is in the document's tables
//! (found from the parser's own list of expected keys and from the serialized defaults), every
//! key in the tables exists, a config of every documented default loads and equals the
//! built-in defaults, each documented range's ends are accepted and the values just past
//! them refused (naming the key), each documented word is accepted, and each removed key is
//! refused naming its replacement and is not among the keys a misspelt one is told to use.

use std::collections::BTreeSet;
use std::path::Path;

use ci_gate::config::{
    CompileSettings, Config, Dtype, EvalSettings, GateSettings, MeasureSettings, ParitySettings,
    ShapeParams,
};
use serde_yaml::{Mapping, Value};

/// One row of a `| key | default | accepted | meaning |` table.
#[derive(Clone, Debug)]
struct Row {
    key: String,
    default: String,
    accepted: String,
}

fn doc() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFIG.md")).unwrap()
}

/// The text between the first pair of backticks of `cell`, if it starts with one.
fn literal(cell: &str) -> Option<&str> {
    let rest = cell.trim().strip_prefix('`')?;
    Some(&rest[..rest.find('`')?])
}

/// Every backticked token of `cell`.
fn literals(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The rows of the tables whose header starts with `| key |` (or `| removed key |`).
fn tables(header: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in doc().lines() {
        if line.starts_with(header) {
            inside = true;
            continue;
        }
        if !line.starts_with('|') {
            inside = false;
            continue;
        }
        if inside && !line.starts_with("| ---") {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect();
            rows.push(cells);
        }
    }
    rows
}

fn rows() -> Vec<Row> {
    let rows: Vec<Row> = tables("| key |")
        .into_iter()
        .map(|c| {
            assert!(
                c.len() == 4,
                "a row of docs/CONFIG.md has {} cells: {c:?}",
                c.len()
            );
            Row {
                key: literal(&c[0])
                    .unwrap_or_else(|| panic!("key not in backticks: {c:?}"))
                    .to_owned(),
                default: c[1].clone(),
                accepted: c[2].clone(),
            }
        })
        .collect();
    assert!(
        rows.len() > 25,
        "only {} rows found in docs/CONFIG.md",
        rows.len()
    );
    rows
}

/// (removed key, the keys named as its replacement)
fn removed() -> Vec<(String, Vec<String>)> {
    tables("| removed key |")
        .into_iter()
        .map(|c| {
            (
                literal(&c[0]).unwrap().to_owned(),
                literals(&c[1]).into_iter().map(str::to_owned).collect(),
            )
        })
        .collect()
}

/// Flattened keys of a serialized value: `float16.max_abs` for nested mappings.
fn flat_keys(prefix: &str, v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flat_keys(&format!("{prefix}.{k}"), v, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned());
        }
    }
}

fn shape() -> ShapeParams {
    ShapeParams::new(1, 1, 64, 64, false, Dtype::Float16)
}

/// The settings the code has, by their serialized defaults (`gpu_budget_s` is serialized
/// only when set).
fn serialized_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let measure = MeasureSettings {
        gpu_budget_s: Some(60.0),
        ..MeasureSettings::default()
    };
    flat_keys(
        "gate",
        &serde_json::to_value(GateSettings::default()).unwrap(),
        &mut keys,
    );
    flat_keys(
        "parity",
        &serde_json::to_value(ParitySettings::default()).unwrap(),
        &mut keys,
    );
    flat_keys(
        "measure",
        &serde_json::to_value(measure).unwrap(),
        &mut keys,
    );
    flat_keys(
        "eval",
        &serde_json::to_value(EvalSettings::default()).unwrap(),
        &mut keys,
    );
    flat_keys(
        "shapes[]",
        &serde_json::to_value(shape()).unwrap(),
        &mut keys,
    );
    keys
}

fn parse(yaml: &str) -> Result<Config, String> {
    Config::parse(yaml, Path::new("configs/t.yaml")).map_err(|e| e.to_string())
}

const SHAPE: &str =
    "shapes:\n  - {batch: 1, heads: 1, seq_len: 64, head_dim: 64, dtype: float16}\n";

/// The keys the parser expects where `at` (a YAML prefix ending in a mapping) gets an
/// unknown key: serde's own list ("expected one of `a`, `b`").
fn expected_keys(yaml: &str) -> BTreeSet<String> {
    let e = parse(yaml).unwrap_err();
    let list = e
        .split_once("expected one of ")
        .or_else(|| e.split_once("expected "))
        .unwrap_or_else(|| panic!("no list of expected keys in: {e}"))
        .1;
    let list = list.split(" at line").next().unwrap();
    literals(list).into_iter().map(str::to_owned).collect()
}

/// Every key the parser knows, from its refusals of an unknown key in each mapping.
fn parser_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for top in expected_keys(&format!("bogus_key: 1\n{SHAPE}")) {
        let (mapping, with_shape) = match top.as_str() {
            "gate" | "parity" | "measure" | "compile" | "eval" => (true, true),
            _ => (false, false),
        };
        if !mapping {
            keys.insert(top);
            continue;
        }
        for k in expected_keys(&format!(
            "{top}:\n  bogus_key: 1\n{}",
            if with_shape { SHAPE } else { "" }
        )) {
            if top == "parity" && (k == "float16" || k == "bfloat16") {
                for t in expected_keys(&format!("parity:\n  {k}:\n    bogus_key: 1\n{SHAPE}")) {
                    keys.insert(format!("parity.{k}.{t}"));
                }
            } else {
                keys.insert(format!("{top}.{k}"));
            }
        }
    }
    keys.remove("shapes");
    for k in expected_keys(
        "shapes:\n  - {batch: 1, heads: 1, seq_len: 64, head_dim: 64, dtype: float16, bogus_key: 1}\n",
    ) {
        keys.insert(format!("shapes[].{k}"));
    }
    keys.insert("shapes".into());
    keys
}

#[test]
fn every_key_of_the_code_is_documented_and_every_documented_key_exists() {
    let documented: BTreeSet<String> = rows().into_iter().map(|r| r.key).collect();
    let removed: BTreeSet<String> = removed().into_iter().map(|(k, _)| k).collect();
    let parser = parser_keys();
    let undocumented: Vec<_> = parser
        .iter()
        .filter(|k| !documented.contains(*k) && !removed.contains(*k))
        .collect();
    assert!(
        undocumented.is_empty(),
        "keys the parser reads that docs/CONFIG.md does not list: {undocumented:?}"
    );
    let unknown: Vec<_> = documented.iter().filter(|k| !parser.contains(*k)).collect();
    assert!(
        unknown.is_empty(),
        "docs/CONFIG.md lists keys the parser does not read: {unknown:?}"
    );
    // A removed key is refused by name (below), and not offered where a key is misspelt.
    let offered: Vec<_> = removed.iter().filter(|k| parser.contains(*k)).collect();
    assert!(
        offered.is_empty(),
        "removed keys among the keys a misspelt one is told to use: {offered:?}"
    );
    let serialized = serialized_keys();
    let missing: Vec<_> = serialized
        .iter()
        .filter(|k| !documented.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "settings not in docs/CONFIG.md: {missing:?}"
    );
}

/// `gate.alpha` → the mapping entry to set in `root`, creating what is missing; `shapes[]`
/// is the first shape.
fn set(root: &mut Value, key: &str, value: Value) {
    let mut node = root;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if *part == "shapes[]" {
            node = node
                .as_mapping_mut()
                .unwrap()
                .get_mut("shapes")
                .unwrap()
                .as_sequence_mut()
                .unwrap()
                .get_mut(0)
                .unwrap();
            continue;
        }
        let map = node.as_mapping_mut().unwrap();
        if last {
            map.insert(Value::from(*part), value);
            return;
        }
        if !map.contains_key(*part) {
            map.insert(Value::from(*part), Value::Mapping(Mapping::new()));
        }
        node = map.get_mut(*part).unwrap();
    }
}

/// A config of every documented default (the required shape fields at small values).
fn all_defaults() -> Value {
    let mut root: Value = serde_yaml::from_str(SHAPE).unwrap();
    for row in rows() {
        match literal(&row.default) {
            Some(lit) => set(&mut root, &row.key, serde_yaml::from_str(lit).unwrap()),
            None => assert!(
                ["name", "shapes"].contains(&row.key.as_str())
                    || (row.key.starts_with("shapes[].") && row.default == "required"),
                "{}: the default {:?} is not a literal in backticks",
                row.key,
                row.default
            ),
        }
    }
    root
}

fn yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap()
}

#[test]
fn a_config_of_every_documented_default_is_the_built_in_default() {
    let c = parse(&yaml(&all_defaults())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.gate, GateSettings::default(), "gate");
    assert_eq!(c.parity, ParitySettings::default(), "parity");
    assert_eq!(c.measure, MeasureSettings::default(), "measure");
    assert_eq!(c.compile, CompileSettings::default(), "compile");
    assert_eq!(c.eval, EvalSettings::default(), "eval");
    assert!(c.peers.is_empty());
    assert_eq!(c.shapes, [shape()], "shapes[].causal's default");
    // `name`'s default: the file's name without .yaml.
    assert_eq!(c.name, "t");
    // And a config of only the required keys has the same settings.
    let minimal = parse(SHAPE).unwrap();
    assert_eq!(
        (minimal.gate, minimal.parity, minimal.measure),
        (c.gate, c.parity, c.measure)
    );
}

/// Whether the setting is a whole number (by its serialized default).
fn integer(key: &str) -> bool {
    let (section, rest) = key.split_once('.').unwrap();
    let v = match section {
        "gate" => serde_json::to_value(GateSettings::default()).unwrap(),
        "parity" => serde_json::to_value(ParitySettings::default()).unwrap(),
        "measure" => serde_json::to_value(MeasureSettings::default()).unwrap(),
        "eval" => serde_json::to_value(EvalSettings::default()).unwrap(),
        "shapes[]" => serde_json::to_value(shape()).unwrap(),
        _ => panic!("{key}"),
    };
    let v = rest.split('.').fold(&v, |v, k| &v[k]);
    // gpu_budget_s (auto by default) is a number of seconds.
    v.is_u64() || v.is_i64()
}

/// A range written `(a, b)`, `[a, b]`, `(a, b]` or `[a, b)`.
fn range(token: &str) -> Option<(bool, f64, f64, bool)> {
    let lo_incl = match token.chars().next()? {
        '[' => true,
        '(' => false,
        _ => return None,
    };
    let hi_incl = match token.chars().last()? {
        ']' => true,
        ')' => false,
        _ => return None,
    };
    let (a, b) = token[1..token.len() - 1].split_once(", ")?;
    Some((lo_incl, a.parse().ok()?, b.parse().ok()?, hi_incl))
}

fn number(x: f64, integer: bool) -> Value {
    if integer {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// The config of all defaults with `key` set to `value` (and what a range check of the
/// rounds needs beside it).
fn with(key: &str, value: Value) -> String {
    let mut root = all_defaults();
    match key {
        "measure.max_rounds" => set(&mut root, "measure.min_rounds", Value::from(2)),
        "measure.min_rounds" => set(&mut root, "measure.max_rounds", Value::from(200)),
        _ => {}
    }
    set(&mut root, key, value);
    yaml(&root)
}

/// The path serde_yaml names a key by: `shapes[0].batch` for `shapes[].batch`.
fn path(key: &str) -> String {
    key.replace("shapes[]", "shapes[0]")
}

fn accepts(key: &str, value: Value) {
    let text = with(key, value.clone());
    if let Err(e) = parse(&text) {
        panic!("{key} = {value:?} is documented as accepted: {e}");
    }
}

fn refuses(key: &str, value: Value) {
    match parse(&with(key, value.clone())) {
        Ok(_) => panic!("{key} = {value:?} is outside the documented range but was accepted"),
        // The key by its path, or (a check of the mapping, such as max_rounds below
        // min_rounds) by its name.
        Err(e) => {
            let name = key.rsplit('.').next().unwrap();
            assert!(
                e.contains(&path(key)) || e.contains(name),
                "{key} = {value:?}: the error does not name the key: {e}"
            )
        }
    }
}

#[test]
fn documented_ranges_and_words_are_what_the_parser_enforces() {
    let mut checked = 0;
    for row in rows() {
        let key = row.key.as_str();
        // Checked by their own tests below.
        if ["name", "peers", "compile.defines", "shapes"].contains(&key) {
            continue;
        }
        if row.accepted == "a seed" {
            accepts(key, Value::from(0u64));
            accepts(key, Value::from(u64::MAX));
            refuses(key, Value::from(-1));
            checked += 1;
            continue;
        }
        let tokens = literals(&row.accepted);
        assert!(
            !tokens.is_empty(),
            "{key}: the accepted values {:?} are not in backticks",
            row.accepted
        );
        for token in tokens {
            if let Some((lo_incl, lo, hi, hi_incl)) = range(token) {
                let int = integer(key);
                let past_hi = if int { hi + 1.0 } else { hi * 1.001 };
                if lo_incl {
                    accepts(key, number(lo, int));
                    refuses(key, number(lo - 1.0, int));
                } else {
                    refuses(key, number(lo, int));
                }
                if hi_incl {
                    accepts(key, number(hi, int));
                    refuses(key, number(past_hi, int));
                } else {
                    refuses(key, number(hi, int));
                }
            } else {
                accepts(key, serde_yaml::from_str(token).unwrap());
            }
            checked += 1;
        }
        refuses(key, Value::from("not-a-value"));
    }
    assert!(checked > 30, "only {checked} documented values checked");
}

#[test]
fn documented_name_peers_defines_and_shapes_limits_hold() {
    let base = |extra: &str| format!("{extra}{SHAPE}");
    assert_eq!(
        parse(&base(&format!("name: {}\n", "a".repeat(128))))
            .unwrap()
            .name
            .len(),
        128
    );
    for bad in [&"a".repeat(129), ".hidden", "a/b"] {
        let e = parse(&base(&format!("name: \"{bad}\"\n"))).unwrap_err();
        assert!(e.contains("name"), "{e}");
    }
    let peers = rows().into_iter().find(|r| r.key == "peers").unwrap();
    let names = literals(&peers.accepted);
    assert_eq!(names.len(), 3, "{names:?}");
    let c = parse(&base(&format!(
        "peers: [{}, {}]\n",
        names.join(", "),
        names[0]
    )))
    .unwrap();
    assert_eq!(c.peers.len(), 3, "a name listed twice counts once");
    assert!(
        parse(&base("peers: [triton]\n"))
            .unwrap_err()
            .contains("peers")
    );

    let defines = |n: usize| {
        (0..n)
            .map(|i| format!("D{i}=1"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    parse(&base(&format!("compile:\n  defines: [{}]\n", defines(16)))).unwrap();
    let e = parse(&base(&format!("compile:\n  defines: [{}]\n", defines(17)))).unwrap_err();
    assert!(e.contains("compile.defines"), "{e}");
    let long = format!(
        "compile:\n  defines: [{}={}]\n",
        "N".repeat(64),
        "v".repeat(64)
    );
    parse(&base(&long)).unwrap();
    let e = parse(&base(&format!(
        "compile:\n  defines: [{}]\n",
        "N".repeat(65)
    )))
    .unwrap_err();
    assert!(e.contains("compile.defines[0]"), "{e}");

    let shapes = |n: u32| {
        let mut s = String::from("shapes:\n");
        for i in 1..=n {
            s.push_str(&format!(
                "  - {{batch: 1, heads: 1, seq_len: {i}, head_dim: 64, dtype: f16}}\n"
            ));
        }
        s
    };
    assert_eq!(parse(&shapes(1000)).unwrap().shapes.len(), 1000);
    assert!(parse(&shapes(1001)).unwrap_err().contains("shapes"));
    assert!(parse("shapes: []\n").unwrap_err().contains("shapes"));
    let e = parse(&format!(
        "{SHAPE}  - {{batch: 1, heads: 1, seq_len: 64, head_dim: 64, dtype: fp16}}\n"
    ))
    .unwrap_err();
    assert!(e.contains("duplicate shape"), "{e}");
    // The aliases the shapes table names.
    for alias in ["fp16", "f16", "half"] {
        let c = parse(&SHAPE.replace("float16", alias)).unwrap();
        assert_eq!(c.shapes[0].dtype, Dtype::Float16);
    }
    let c = parse(&SHAPE.replace("float16", "bf16")).unwrap();
    assert_eq!(c.shapes[0].dtype, Dtype::Bfloat16);
    // At most 2^31 elements a tensor.
    let e =
        parse("shapes:\n  - {batch: 1024, heads: 1024, seq_len: 4096, head_dim: 64, dtype: f16}\n")
            .unwrap_err();
    assert!(e.contains("2^31"), "{e}");
}

#[test]
fn removed_keys_are_refused_naming_their_replacement() {
    let removed = removed();
    assert!(!removed.is_empty());
    for (key, instead) in removed {
        let (section, name) = key.split_once('.').unwrap();
        let e = parse(&format!("{section}:\n  {name}: 1\n{SHAPE}")).unwrap_err();
        assert!(e.contains(&key) && e.contains("was removed"), "{key}: {e}");
        for k in instead {
            assert!(e.contains(&k), "{key}: the error does not name {k}: {e}");
        }
    }
}

#[test]
fn the_documented_auto_gpu_budget_is_the_code_s() {
    // "4 × the planned timed GPU time + 30 s": 3 shapes × 24 pairs × 2 sides × 10 samples
    // × 2 ms = 2.88 s planned.
    let c = parse(&format!(
        "measure: {{max_rounds: 24, samples_per_round: 10, sample_ms: 2}}\nshapes:\n{}",
        [64, 128, 256]
            .map(|s| format!(
                "  - {{batch: 1, heads: 1, seq_len: {s}, head_dim: 64, dtype: f16}}\n"
            ))
            .concat()
    ))
    .unwrap();
    assert!(
        (c.gpu_budget_s() - (4.0 * 2.88 + 30.0)).abs() < 1e-9,
        "{}",
        c.gpu_budget_s()
    );
    assert!(doc().contains("`auto` = 4 × the planned timed GPU time (shapes × `max_rounds` × 2 sides × `samples_per_round` × `sample_ms`) + 30 s"));
}

#[test]
fn the_readme_s_config_example_loads() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let example = readme
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("no ```yaml block in README.md");
    let c = Config::parse(example, Path::new("configs/pr.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.name, "pr");
    assert!(!c.shapes.is_empty());
}
