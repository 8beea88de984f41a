//! examples/kubernetes, the manifests an operator applies (`kubectl apply -k`), held to the
//! schemas of the API they are applied to: Kubernetes' own kinds against its OpenAPI schemas,
//! strictly (an unknown field refused, as `kubectl apply --validate=strict` refuses it), and the
//! ServiceMonitor against prometheus-operator's; and to each other (the Service selects the
//! DaemonSet's pods, the ServiceMonitor the Service, all in the one namespace).
//!
//! Oracles: kubernetes-validate 1.37.0 (PyPI: Kubernetes' schemas of each release, 1.30 and
//! 1.37 here, in their strict form); @kubernetes-models/prometheus-operator 6.0.0 (npm: the
//! validators generated from prometheus-operator's monitoring.coreos.com/v1 API), run by
//! Node.js; the Pod Security Standards of Kubernetes 1.30 (the `baseline` level's rules, as
//! its documentation lists them); PyYAML, which reads each file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Scratch, repository, verdict, yaml_documents};
use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The Kubernetes releases the manifests are validated against: the oldest whose schemas
/// kubernetes-validate 1.37 ships that a supported cluster still runs, and its newest.
const RELEASES: [&str; 2] = ["1.30", "1.37"];

/// The kinds of Kubernetes itself, one file each, in kustomization.yaml's order.
const MANIFESTS: [&str; 3] = ["namespace.yaml", "daemonset.yaml", "service.yaml"];

/// A manifest's path.
fn manifest(name: &str) -> PathBuf {
    repository("examples/kubernetes").join(name)
}

/// A manifest's one document, as PyYAML reads it; `None` without PyYAML.
fn document(name: &str) -> Option<serde_json::Value> {
    let mut documents = yaml_documents(&manifest(name))?;
    assert_eq!(documents.len(), 1, "{name}: one object a file");
    Some(documents.remove(0))
}

/// `kubernetes-validate --strict` of `path` against each of [`RELEASES`]: whether it passed,
/// and what it said.
fn kubernetes_validate(path: &Path) -> (bool, String) {
    let mut command = Command::new("python3");
    command.args(["-m", "kubernetes_validate", "--strict"]);
    for release in RELEASES {
        command.args(["-k", release]);
    }
    let (ok, said) = verdict(command.arg(path));
    (
        ok && !said.contains("WARN") && !said.contains("ERROR"),
        said,
    )
}

/// Each manifest of Kubernetes' kinds passes the strict schemas of Kubernetes 1.30 and 1.37,
/// and a copy of the DaemonSet with a field misspelt does not (the validator refuses what
/// it does not know, as the API server's strict field validation does).
///
/// Oracle: kubernetes-validate 1.37.0 (Kubernetes' OpenAPI schemas of 1.30 and 1.37).
#[test]
fn the_manifests_pass_kubernetes_strict_schemas() {
    let version = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--version"])
        .output();
    let version = match version {
        Ok(out) if out.status.success() => stdout(&out).trim().to_string(),
        _ => skip!(
            Need::Tools,
            "kubernetes-validate is not installed (pip install kubernetes-validate==1.37.0)"
        ),
    };
    eprintln!("kubernetes-validate {version}");
    for name in MANIFESTS {
        let (ok, said) = kubernetes_validate(&manifest(name));
        eprintln!("{said}");
        assert!(ok, "{name}: {said}");
        for release in RELEASES {
            assert!(
                said.contains(&format!("against version {release}")),
                "{said}"
            );
        }
    }
    let scratch = Scratch::new("kubernetes-validate");
    let misspelt = scratch.0.join("daemonset.yaml");
    let text = std::fs::read_to_string(manifest("daemonset.yaml")).unwrap();
    assert!(text.contains("readOnlyRootFilesystem: true"));
    std::fs::write(
        &misspelt,
        text.replace(
            "readOnlyRootFilesystem: true",
            "readOnlyRootFileSystem: true",
        ),
    )
    .unwrap();
    let (ok, said) = kubernetes_validate(&misspelt);
    assert!(!ok && said.contains("readOnlyRootFileSystem"), "{said}");
}

/// The ServiceMonitor passes prometheus-operator's schema, and a copy with a scheme it does
/// not know does not.
///
/// Oracle: @kubernetes-models/prometheus-operator 6.0.0 (npm, installed globally), whose
/// validators are generated from prometheus-operator's monitoring.coreos.com/v1 types; Node.js.
#[test]
fn the_service_monitor_passes_prometheus_operators_schema() {
    let Some(monitor) = document("servicemonitor.yaml") else {
        skip!(
            Need::Tools,
            "PyYAML is not installed (apt-get install python3-yaml)"
        );
    };
    let root = Command::new("npm").args(["root", "-g"]).output();
    let module = root
        .ok()
        .map(|out| PathBuf::from(stdout(&out).trim()))
        .map(|root| root.join("@kubernetes-models/prometheus-operator"))
        .filter(|module| module.join("package.json").is_file());
    let Some(module) = module else {
        skip!(
            Need::Tools,
            "Node.js and @kubernetes-models/prometheus-operator are not installed \
             (apt-get install nodejs npm; npm install -g @kubernetes-models/prometheus-operator@6.0.0)"
        );
    };
    let validate = |object: &serde_json::Value| -> (bool, String) {
        let script = format!(
            "const {{ ServiceMonitor }} = await import({:?});\n\
             let text = '';\n\
             for await (const chunk of process.stdin) text += chunk;\n\
             new ServiceMonitor(JSON.parse(text)).validate();\n\
             console.log('valid');",
            module
                .join("monitoring.coreos.com/v1/ServiceMonitor.js")
                .display()
                .to_string()
        );
        let mut child = Command::new("node")
            .args(["--input-type=module", "-e", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run node");
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            object.to_string().as_bytes(),
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success() && stdout(&out).trim() == "valid",
            format!("{}{}", stdout(&out), stderr(&out)),
        )
    };
    let (ok, said) = validate(&monitor);
    assert!(ok, "{said}");
    let mut wrong = monitor.clone();
    wrong["spec"]["endpoints"][0]["scheme"] = "tls".into();
    let (ok, said) = validate(&wrong);
    assert!(!ok && said.contains("scheme"), "{said}");
}

/// The objects name each other: one namespace; the Service selects the DaemonSet's pods and
/// its port is theirs; the ServiceMonitor selects the Service and scrapes that port as the
/// plain Prometheus job does (TLS with the certificate's name, the user of web-config.yml,
/// the node's name as `instance`); kustomization.yaml applies the namespace first, then the
/// rest but the ServiceMonitor, whose CRD a cluster may lack.
#[test]
fn the_manifests_name_each_other() {
    let (Some(namespace), Some(set), Some(service), Some(monitor)) = (
        document("namespace.yaml"),
        document("daemonset.yaml"),
        document("service.yaml"),
        document("servicemonitor.yaml"),
    ) else {
        skip!(
            Need::Tools,
            "PyYAML is not installed (apt-get install python3-yaml)"
        );
    };
    let name = &namespace["metadata"]["name"];
    for object in [&set, &service, &monitor] {
        assert_eq!(&object["metadata"]["namespace"], name, "{object}");
    }
    let pod_labels = &set["spec"]["template"]["metadata"]["labels"];
    for (key, value) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod_labels[key], value, "the Service selects the pods");
    }
    let port = &service["spec"]["ports"][0];
    let container_port = &set["spec"]["template"]["spec"]["containers"][0]["ports"][0];
    assert_eq!(port["targetPort"], container_port["name"]);
    assert_eq!(port["port"], container_port["containerPort"]);
    let selected = &monitor["spec"]["selector"]["matchLabels"];
    for (key, value) in selected.as_object().unwrap() {
        assert_eq!(
            &service["metadata"]["labels"][key], value,
            "the ServiceMonitor selects the Service"
        );
    }
    assert_eq!(monitor["spec"]["namespaceSelector"]["matchNames"][0], *name);
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], port["name"]);
    let Some(plain) = yaml_documents(&repository("examples/prometheus/prometheus-kubernetes.yml"))
    else {
        unreachable!("PyYAML read the manifests");
    };
    let job = &plain[0]["scrape_configs"][0];
    assert_eq!(endpoint["scheme"], job["scheme"]);
    assert_eq!(
        endpoint["tlsConfig"]["serverName"],
        job["tls_config"]["server_name"]
    );
    assert_eq!(
        job["kubernetes_sd_configs"][0]["namespaces"]["names"][0], *name,
        "the plain job looks in the namespace"
    );
    let relabel = &endpoint["relabelings"][0];
    assert_eq!(
        relabel["sourceLabels"][0],
        "__meta_kubernetes_pod_node_name"
    );
    assert_eq!(relabel["targetLabel"], "instance");

    let Some(kustomization) = yaml_documents(&manifest("kustomization.yaml")) else {
        unreachable!("PyYAML read the manifests");
    };
    let resources: Vec<&str> = kustomization[0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(resources, MANIFESTS);
    let image = set["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap();
    let named = kustomization[0]["images"][0]["name"].as_str().unwrap();
    assert!(image.starts_with(&format!("{named}:")), "{image} {named}");
}

/// The namespace enforces the `privileged` level, the one the DaemonSet's pod passes: the
/// `baseline` level refuses exactly its capabilities PERFMON and BPF (past the runtime
/// defaults baseline allows), its hostPath volumes and its hostPort, each of which it needs.
///
/// Oracle: the Pod Security Standards of Kubernetes 1.30 (kubernetes.io's "Pod Security
/// Standards": baseline's "Capabilities", "HostPath Volumes" and "Host Ports" controls, with
/// its list of allowed capabilities).
#[test]
fn the_namespace_is_privileged_since_baseline_refuses_the_pod() {
    let (Some(namespace), Some(set)) = (document("namespace.yaml"), document("daemonset.yaml"))
    else {
        skip!(
            Need::Tools,
            "PyYAML is not installed (apt-get install python3-yaml)"
        );
    };
    let labels = &namespace["metadata"]["labels"];
    for mode in ["enforce", "audit", "warn"] {
        assert_eq!(
            labels[format!("pod-security.kubernetes.io/{mode}")],
            "privileged"
        );
    }
    // Baseline's "Capabilities" control: adding any but these is refused.
    let allowed = [
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ];
    let pod = &set["spec"]["template"]["spec"];
    let mut refused = Vec::new();
    for container in pod["containers"].as_array().unwrap() {
        for added in container["securityContext"]["capabilities"]["add"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let added = added.as_str().unwrap();
            if !allowed.contains(&added) {
                refused.push(format!("capability {added}"));
            }
        }
        for port in container["ports"].as_array().into_iter().flatten() {
            if port["hostPort"].as_u64().is_some_and(|p| p != 0) {
                refused.push(format!("hostPort {}", port["hostPort"]));
            }
        }
    }
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        if volume.get("hostPath").is_some() {
            refused.push(format!("hostPath {}", volume["hostPath"]["path"]));
        }
    }
    assert_eq!(
        refused,
        [
            "capability PERFMON",
            "capability BPF",
            "hostPort 19110",
            "hostPath \"/sys/fs/cgroup\"",
            "hostPath \"/var/log/pods\"",
            "hostPath \"/var/log/containers\""
        ]
    );
    let text = std::fs::read_to_string(manifest("namespace.yaml")).unwrap();
    assert!(
        text.contains("PERFMON and BPF") && text.contains("baseline"),
        "the namespace says why: {text}"
    );
}
