//! Results files written by older versions of bakeoff, brought to the current schema when
//! read (never rewritten on disk).

use super::SCHEMA_VERSION;

/// Version 1 → 2, on the JSON. Version 1 named a point by its label (`key_size=64
/// clients=1 target=all`) and wrote `target = "first"` whether or not the scenario had a
/// target axis. This is the one place a label is read, and only for old files: whether the
/// label shows a target, and which point a scenario's label list means. Labels of scenario
/// points that no run measured are dropped (nothing was measured there).
pub(super) fn upgrade_v1(v: &mut serde_json::Value) {
    use serde_json::Value;
    let mut ids: Vec<(String, String, Value)> = Vec::new(); // (scenario, label, id)
    for run in v["runs"].as_array_mut().into_iter().flatten() {
        for p in run["points"].as_array_mut().into_iter().flatten() {
            let Some(o) = p.as_object_mut() else { continue };
            let label = o.remove("point").and_then(|l| l.as_str().map(String::from));
            let label = label.unwrap_or_default();
            let target = o.get("target").and_then(Value::as_str).map(String::from);
            let shown = target.filter(|t| label.split(' ').any(|w| w == format!("target={t}")));
            o.insert("target".into(), shown.map_or(Value::Null, Value::String));
            let id: serde_json::Map<String, Value> = ["scenario", "vars", "clients", "target"]
                .iter()
                .filter_map(|k| o.get(*k).map(|x| (k.to_string(), x.clone())))
                .collect();
            let scenario = o
                .get("scenario")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !ids.iter().any(|(s, l, _)| s == scenario && *l == label) {
                ids.push((scenario.to_string(), label, Value::Object(id)));
            }
        }
    }
    for s in v["scenarios"].as_array_mut().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default().to_string();
        let labels = s["points"].as_array().cloned().unwrap_or_default();
        let points: Vec<Value> = labels
            .iter()
            .filter_map(|l| {
                ids.iter()
                    .find(|(sc, lab, _)| *sc == name && Some(lab.as_str()) == l.as_str())
                    .map(|(_, _, id)| id.clone())
            })
            .collect();
        s["points"] = Value::Array(points);
    }
    v["schema_version"] = Value::from(SCHEMA_VERSION);
}
