//! Names resolved through the shipped event database (`counterhal-events`), then counted on the
//! driver model. These depend on the database's encodings for p5, p6, intel-arch and k8, and
//! on what pctr makes of them (`tests/data/golden.toml`).

use counterhal_hal::BackendExt;
use std::sync::Arc;

use counterhal_events::{Database, EncoderKind};
use counterhal_hal::{
    Backend, BackendTarget, ErrorKind, GeneralizedEvent, Group, HardwareEvent, OpenOptions,
};
use counterhal_pctr::{ModelCpu, PctrBackend, function};

const KINDS: [ModelCpu; 4] = [
    ModelCpu::P5,
    ModelCpu::P6,
    ModelCpu::IntelArch,
    ModelCpu::Amd,
];

fn db() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

fn pctr_function(backend: &PctrBackend, name: &str) -> (u32, u32) {
    let resolved = backend
        .resolve(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(resolved.terms.len(), 1, "{name}");
    let (word, counters) = backend
        .program_word(&resolved.terms[0].request)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (word, counters.mask())
}

#[derive(serde::Deserialize)]
struct Table {
    row: Vec<Row>,
}

#[derive(serde::Deserialize)]
struct Row {
    e: String,
    cpu: String,
    want: Option<String>,
    error: Option<String>,
}

/// The CPU kind pctr drives a database model's CPU as.
fn kind_of(db: &Database, id: &str) -> ModelCpu {
    match db.model(id).map(|m| m.encoder) {
        Some(EncoderKind::P5) => ModelCpu::P5,
        Some(EncoderKind::P6) => ModelCpu::P6,
        Some(EncoderKind::IntelArch) => ModelCpu::IntelArch,
        Some(EncoderKind::Amd64) => ModelCpu::Amd,
        other => panic!("{id}: {other:?}"),
    }
}

#[test]
fn golden_table() {
    let table: Table =
        toml::from_str(include_str!("data/golden.toml")).expect("golden.toml parses");
    let db = db();
    let mut failures = Vec::new();
    for row in &table.row {
        let (backend, _model) =
            PctrBackend::with_model_as(db.clone(), kind_of(&db, &row.cpu), &row.cpu);
        let got = backend.resolve(&row.e).and_then(|resolved| {
            let words = resolved
                .terms
                .iter()
                .map(|term| backend.program_word(&term.request))
                .collect::<counterhal_hal::Result<Vec<_>>>()?;
            Ok(words
                .iter()
                .map(|(word, counters)| format!("{word:#x} ctr={counters}"))
                .collect::<Vec<_>>()
                .join(" + "))
        });
        let outcome = match &got {
            Ok(text) => text.clone(),
            Err(error) => format!("error {}", error.kind()),
        };
        let expected = match (&row.want, &row.error) {
            (Some(want), None) => want.clone(),
            (None, Some(kind)) => format!("error {kind}"),
            _ => panic!("{}: one of want and error", row.e),
        };
        if outcome != expected {
            failures.push(format!(
                "{} [{}]: want `{expected}`, got `{outcome}` {:?}",
                row.e,
                row.cpu,
                got.err()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(table.row.len() >= 25);
}

#[test]
fn instructions_resolve_and_count_on_every_cpu() {
    for cpu in KINDS {
        let (backend, model) = PctrBackend::with_model(db(), cpu);
        let (word, _) = pctr_function(&backend, "instructions");
        let code = u32::from(cpu.instructions_event().unwrap());
        let event_mask = if cpu == ModelCpu::P5 {
            function::P5_EVENT_MASK
        } else {
            0xff
        };
        assert_eq!(word & event_mask, code, "{cpu}: {word:#x}");
        let mut group = backend
            .open_named(
                &["instructions"],
                &BackendTarget::ThisThread,
                &OpenOptions::default(),
            )
            .unwrap();
        group.enable().unwrap();
        model.work(10_000);
        model.retire_instructions(0, 500);
        let readings = group.read_to_vec().unwrap();
        assert_eq!(
            readings[0].value, 10_500,
            "{cpu}: user and kernel by default"
        );
    }
}

#[test]
fn user_modifier_filters_kernel_mode() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let (word, _) = pctr_function(&backend, "INST_RETIRED:u");
    assert_eq!(word & (function::U | function::K), function::U, "{word:#x}");
    let mut group = backend
        .open_named(
            &["INST_RETIRED:u"],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    model.retire_instructions(70, 30);
    assert_eq!(group.read_to_vec().unwrap()[0].value, 70);
}

#[test]
fn p6_counter_constraints_come_from_the_database() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    assert_eq!(pctr_function(&backend, "FLOPS").1, 0b01);
    assert_eq!(pctr_function(&backend, "MUL").1, 0b10);
    let options = OpenOptions::default();
    let mut group = backend
        .open_named(&["MUL", "FLOPS"], &BackendTarget::ThisThread, &options)
        .unwrap();
    group.enable().unwrap();
    model.feed(0x12, None, 3, 0);
    model.feed(0xc1, None, 5, 0);
    let values: Vec<u64> = group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, vec![3, 5]);
    drop(group);
    let error = backend
        .open_named(
            &["FP_COMP_OPS_EXE", "CYCLES_DIV_BUSY"],
            &BackendTarget::ThisThread,
            &options,
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    assert!(error.message().contains("FP_COMP_OPS_EXE"), "{error}");
    assert!(error.message().contains("CYCLES_DIV_BUSY"), "{error}");
}

#[test]
fn unknown_names_are_invalid_events() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let error = backend.resolve("NO_SUCH_EVENT_ANYWHERE").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{error}");
}

#[test]
fn capabilities_list_the_generalized_events_that_resolve() {
    for cpu in KINDS {
        let (backend, _model) = PctrBackend::with_model(db(), cpu);
        let generalized = backend.generalized();
        let instructions = GeneralizedEvent::Hardware(HardwareEvent::Instructions);
        assert!(
            generalized.contains(&instructions),
            "{cpu}: {generalized:?}"
        );
        for event in &generalized {
            assert!(
                backend.resolve(&event.name()).is_ok(),
                "{cpu}: {}",
                event.name()
            );
        }
    }
}

/// pctr(1)'s P6 names are accepted beside the table's; its defaults for unit masks are not
/// copied (see the README's "pctr(1)'s names and defaults").
#[test]
fn pctr1_names_resolve_and_our_unit_mask_defaults_hold() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    // 0x43: pctr(1) says DATA_MEM_REF, the table DATA_MEM_REFS; both give one function.
    assert_eq!(
        pctr_function(&backend, "DATA_MEM_REF:u"),
        pctr_function(&backend, "DATA_MEM_REFS:u")
    );
    assert_eq!(pctr_function(&backend, "p6::data_mem_ref").0 & 0xff, 0x43);
    let resolved = backend.resolve("DATA_MEM_REF:u").unwrap();
    assert_eq!(
        resolved.name, "DATA_MEM_REF:u",
        "the name as the user gave it"
    );
    // 0x44, DATA_MEM_CACHE_REF, is in pctr(1) only.
    let (word, counters) = pctr_function(&backend, "DATA_MEM_CACHE_REF:k");
    assert_eq!(
        (word & 0xff, word & (function::U | function::K)),
        (0x44, function::K)
    );
    assert_eq!(counters, 0b11);
    // A name neither spells is still unknown, with the nearest names.
    let error = backend.resolve("DATA_MEM_REFX").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent);
    // MESI: all four states when none is named (as pctr(1)); only those named otherwise
    // (pctr(1) sets all four unless all four are named).
    assert_eq!(
        pctr_function(&backend, "L2_LD").0 & function::UM_MESI,
        0xf00
    );
    assert_eq!(
        pctr_function(&backend, "L2_LD:MODIFIED").0 & function::UM_MESI,
        function::UM_M
    );
    // Any initiator only when named (pctr(1) always sets it on an (A) event).
    assert_eq!(
        pctr_function(&backend, "BUS_TRAN_ANY").0 & function::UM_A,
        0
    );
    assert_eq!(
        pctr_function(&backend, "BUS_TRAN_ANY:ANY_INITIATOR").0 & function::UM_A,
        function::UM_A
    );
    // And the pctr(1) name counts.
    let request = backend.resolve("DATA_MEM_REF:u").unwrap().terms[0]
        .request
        .clone();
    let mut group = backend
        .open(
            &[request],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    model.feed(0x43, None, 11, 4);
    assert_eq!(group.read_to_vec().unwrap()[0].value, 11);
    // Other tables do not take pctr(1)'s P6 names.
    let (amd, _) = PctrBackend::with_model(db(), ModelCpu::Amd);
    assert!(amd.resolve("DATA_MEM_REF").is_err());
}
