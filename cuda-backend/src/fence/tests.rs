//! The fence's tests: the rewriter by instruction family and state space, its refusals by
//! name, the forms a text scanner misreads, the checker against rewritten modules broken on
//! purpose, and the committed fenced fixtures.

use super::*;

const HEADER: &str = ".version 7.8\n.target sm_52\n.address_size 64\n";

/// A module of one entry `k(.param .u64 p, .param .u32 n)` whose body is `body`.
fn entry(body: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 p,\n\t.param .u32 n\n)\n{{\n\t.reg .b64 %rd<8>;\n\t.reg .b32 %r<8>;\n\
         \t.reg .b16 %h<2>;\n\t.reg .f32 %f<8>;\n\t.reg .pred %p<4>;\n\tld.param.u64 %rd1, [p];\n{body}\tret;\n}}\n"
    )
}

fn fenced(body: &str) -> FencedModule {
    match fence_ptx(&entry(body)) {
        Ok(m) => m,
        Err(e) => panic!("{body}: {e}"),
    }
}

fn refusal(body: &str) -> FenceError {
    fence_ptx(&entry(body)).expect_err(body)
}

/// The printed lines of the fenced module, trimmed.
fn lines(module: &FencedModule) -> Vec<String> {
    module.ptx().lines().map(|l| l.trim().replace('\t', " ")).collect()
}

#[test]
fn each_family_is_clamped_into_the_window_of_its_space_by_its_width() {
    for (instruction, window, width) in [
        ("ld.global.u8 %r1, [%rd1];", 'g', 1),
        ("ld.global.nc.u16 %h1, [%rd1];", 'g', 2),
        ("ld.global.f32 %f1, [%rd1+4];", 'g', 4),
        ("st.global.u64 [%rd1], %rd2;", 'g', 8),
        ("ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", 'g', 16),
        ("st.global.v2.f64 [%rd1], {%rd2, %rd3};", 'g', 16),
        ("ld.volatile.global.u32 %r1, [%rd1];", 'g', 4),
        ("ld.relaxed.gpu.global.L1::evict_last.u32 %r1, [%rd1];", 'g', 4),
        ("ldu.global.u32 %r1, [%rd1];", 'g', 4),
        ("atom.global.add.u32 %r1, [%rd1], 1;", 'g', 4),
        ("atom.global.cas.b64 %rd2, [%rd1], %rd2, %rd3;", 'g', 8),
        ("red.global.add.f32 [%rd1], %f1;", 'g', 4),
        ("prefetch.global.L2 [%rd1];", 'g', 1),
        ("ld.shared.u32 %r1, [%r2];", 's', 4),
        ("st.shared.v2.u32 [%rd2+8], {%r1, %r2};", 's', 8),
        ("atom.shared.add.u32 %r1, [%r2], 1;", 's', 4),
        ("ld.shared.u16 %h1, [%h0];", 's', 2),
        ("ld.local.u32 %r1, [%rd2];", 'l', 4),
        ("st.local.v4.f32 [%rd2+16], {%f1, %f2, %f3, %f4};", 'l', 16),
        ("ld.local.u32 %r1, [8];", 'l', 4),
        ("ld.const.f32 %f1, [%rd2];", 'c', 4),
    ] {
        let module = fenced(&format!("\t{instruction}\n"));
        assert_eq!(module.accesses(), 1, "{instruction}");
        assert_eq!(module.widest_access(), width, "{instruction}");
        let text = lines(&module);
        let limit = format!("%__kargs_{window}{width}");
        assert!(
            text.iter().any(|l| l == &format!("min.u32 %__kargs_k, %__kargs_u, {limit};")),
            "{instruction}: {text:#?}"
        );
        assert!(
            text.iter().any(|l| l.ends_with("[%__kargs_a0];") || l.contains("[%__kargs_a0], ")),
            "{instruction}"
        );
        assert!(
            !text.iter().any(|l| l.contains("[%rd1]") && !l.starts_with("ld.param")),
            "{instruction}: {text:#?}"
        );
    }
}

#[test]
fn a_generic_access_is_clamped_into_the_window_it_resolves_to() {
    // Without shared or local variables: everything into the fence.
    let text = lines(&fenced("\t@%p1 st.u32 [%rd1+4], %r1;\n"));
    for line in [
        "add.s64 %__kargs_e, %rd1, 4;",
        // A global address is an offset into the fence: no subtraction of the base.
        "cvt.u32.u64 %__kargs_u, %__kargs_e;",
        "add.u64 %__kargs_a0, %__kargs_c, %__kargs_gb;",
        "xor.b32 %__kargs_d, %__kargs_u, %__kargs_k;",
        "@%p1 or.b32 %__kargs_v, %__kargs_v, %__kargs_d;",
        "@%p1 st.u32 [%__kargs_a0], %r1;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    assert!(!text.iter().any(|l| l.starts_with("isspacep")), "no window to resolve to");
    assert!(
        !text.iter().any(|l| l.starts_with("sub.u32 %__kargs_u, %__kargs_u")),
        "no base subtracted: {text:#?}"
    );
    // With shared and local variables: through each window where isspacep says so.
    let text = lines(&fenced(
        "\t.shared .align 4 .b8 tile[64];\n\t.local .align 8 .b8 depot[32];\n\tld.u32 %r1, [%rd1];\n\tatom.add.u32 %r2, [%rd1], 1;\n",
    ));
    for line in [
        "isspacep.shared %__kargs_ps, %rd1;",
        "cvta.to.shared.u64 %__kargs_x, %rd1;",
        "cvta.shared.u64 %__kargs_x, %__kargs_x;",
        "selp.b64 %__kargs_a0, %__kargs_x, %__kargs_a0, %__kargs_ps;",
        "sub.u32 %__kargs_u, %__kargs_u, %__kargs_sb;",
        "@%__kargs_ps xor.b32 %__kargs_d, %__kargs_u, %__kargs_k;",
        "isspacep.local %__kargs_pl, %rd1;",
        "selp.b64 %__kargs_a0, %__kargs_x, %__kargs_a0, %__kargs_pl;",
        "@%__kargs_pl xor.b32 %__kargs_d, %__kargs_u, %__kargs_k;",
        ".shared .align 16 .b8 tile[64];",
        ".local .align 16 .b8 depot[32];",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    // The atomic does not go through the local window.
    assert_eq!(text.iter().filter(|l| l.starts_with("isspacep.local")).count(), 1, "{text:#?}");
    assert_eq!(text.iter().filter(|l| l.starts_with("isspacep.shared")).count(), 2, "{text:#?}");
}

#[test]
fn windows_are_computed_once_from_the_variables_and_padded_to_sixteen_bytes() {
    let module = fenced(
        "\t.shared .align 4 .b8 small[4];\n\t.shared .align 8 .f64 big[4];\n\tld.shared.u32 %r1, [%r2];\n",
    );
    let text = lines(&module);
    let window: Vec<&str> = text
        .iter()
        .filter(|l| (l.contains("__kargs_s") || l.contains("__kargs_h")) && !l.starts_with(".reg"))
        .map(String::as_str)
        .take(11)
        .collect();
    // In 32 bits, the shared state space's own addresses; the access's offset from the base
    // clamped and joined to it in 32 bits too.
    assert_eq!(
        window,
        [
            "mov.u32 %__kargs_sb, small;",
            "add.u32 %__kargs_se, %__kargs_sb, 4;",
            "mov.u32 %__kargs_h, big;",
            "min.u32 %__kargs_sb, %__kargs_sb, %__kargs_h;",
            "add.u32 %__kargs_h, %__kargs_h, 32;",
            "max.u32 %__kargs_se, %__kargs_se, %__kargs_h;",
            "sub.u32 %__kargs_sn, %__kargs_se, %__kargs_sb;",
            "sub.u32 %__kargs_s4, %__kargs_sn, 4;",
            "sub.u32 %__kargs_u, %__kargs_u, %__kargs_sb;",
            "min.u32 %__kargs_k, %__kargs_u, %__kargs_s4;",
            "add.u32 %__kargs_j, %__kargs_k, %__kargs_sb;",
        ]
    );
    assert!(text.iter().any(|l| l == "cvt.u64.u32 %__kargs_a0, %__kargs_j;"), "{text:#?}");
    // No variable of 16 bytes: a padding variable gives the window its length.
    let text = lines(&fenced("\t.shared .align 4 .b8 small[4];\n\tld.shared.u32 %r1, [%r2];\n"));
    assert!(text.iter().any(|l| l == ".shared .align 16 .b8 __kargs_shared_pad[16];"), "{text:#?}");
    // Dynamic shared memory: as long as the launch gives.
    let dynamic = format!(
        "{HEADER}.extern .shared .align 4 .b8 dyn[];\n.visible .entry k()\n{{\n\t.reg .b64 %rd<4>;\n\
         \tmov.u64 %rd1, dyn;\n\tld.shared.u32 %r1, [%rd1+8];\n\tret;\n}}\n"
    )
    .replace(".reg .b64 %rd<4>;", ".reg .b64 %rd<4>;\n\t.reg .b32 %r<2>;");
    let text: Vec<String> =
        fence_ptx(&dynamic).unwrap().ptx().lines().map(|l| l.trim().replace('\t', " ")).collect();
    for line in [
        ".extern .shared .align 16 .b8 dyn[];",
        "mov.u32 %__kargs_h, dyn;",
        "mov.u32 %__kargs_n, %dynamic_smem_size;",
        "add.u32 %__kargs_h, %__kargs_h, %__kargs_n;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
}

/// The clamps in a fenced body: its `min.u32` lines.
fn clamps(text: &[String]) -> usize {
    text.iter().filter(|l| l.starts_with("min.u32 %__kargs_k")).count()
}

#[test]
fn accesses_through_one_register_at_constant_offsets_share_one_clamp() {
    let tile = "\t.shared .align 4 .b8 tile[1024];\n";
    // An unrolled walk down a tile's column: one clamp covering all of it.
    let text = lines(&fenced(&format!(
        "{tile}\tld.shared.f32 %f1, [%r2];\n\tadd.f32 %f4, %f4, %f1;\n\tld.shared.f32 %f2, [%r2+64];\n\tld.shared.f32 %f3, [%r2+128];\n"
    )));
    assert_eq!(clamps(&text), 1, "{text:#?}");
    for line in [
        "min.u32 %__kargs_k, %__kargs_u, %__kargs_s132;",
        "ld.shared.f32 %f1, [%__kargs_r0];",
        "ld.shared.f32 %f2, [%__kargs_r0+64];",
        "ld.shared.f32 %f3, [%__kargs_r0+128];",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    // The checker holds each access to the group's span and alignment.
    let grouped = fenced(&format!("{tile}\tld.shared.f32 %f1, [%r2];\n\tld.shared.f32 %f3, [%r2+128];\n"));
    let text = grouped.ptx().to_owned();
    assert!(check(&text).is_ok());
    for (edit, why) in [
        ("[%__kargs_r0+132]", "past the span"),
        ("[%__kargs_r0+126]", "misaligned"),
        ("[%__kargs_r0+-4]", "below"),
    ] {
        let broken = text.replacen("[%__kargs_r0+128]", edit, 1);
        assert_ne!(broken, text, "{why}");
        assert_eq!(check(&broken).map_err(|f| f.kind), Err(FindingKind::Unproven), "{why}");
    }
    // Offsets below zero: the lowest is clamped, the others follow it.
    let text = lines(&fenced("\tld.global.f32 %f1, [%rd1+-8];\n\tld.global.f32 %f2, [%rd1+4];\n"));
    assert_eq!(clamps(&text), 1, "{text:#?}");
    assert!(text.iter().any(|l| l == "add.s64 %__kargs_e, %rd1, -8;"), "{text:#?}");
    assert!(text.iter().any(|l| l == "ld.global.f32 %f2, [%__kargs_r0+12];"), "{text:#?}");
    // Each their own clamp: a label between, a write of the register between, a guarded access,
    // an offset that is no multiple of the widest access, a span longer than the window.
    for (body, why) in [
        (format!("{tile}\tld.shared.f32 %f1, [%r2];\nL1:\n\tld.shared.f32 %f2, [%r2+4];\n"), "a label"),
        (
            format!(
                "{tile}\tld.shared.f32 %f1, [%r2];\n\tadd.u32 %r2, %r2, 4;\n\tld.shared.f32 %f2, [%r2+4];\n"
            ),
            "a write",
        ),
        (format!("{tile}\tld.shared.f32 %f1, [%r2];\n\t@%p1 ld.shared.f32 %f2, [%r2+4];\n"), "a guard"),
        (
            format!("{tile}\tld.shared.f32 %f1, [%r2];\n\tld.shared.v2.f32 {{%f2, %f3}}, [%r2+4];\n"),
            "misaligned",
        ),
        (format!("{tile}\tld.shared.f32 %f1, [%r2];\n\tld.shared.f32 %f2, [%r2+1024];\n"), "too long"),
        (
            "\tld.global.f32 %f1, [%rd1];\n\tld.global.f32 %f2, [%rd1+256];\n".to_owned(),
            "past the shortest fence",
        ),
    ] {
        let text = lines(&fenced(&body));
        assert_eq!(clamps(&text), 2, "{why}: {text:#?}");
        assert!(!text.iter().any(|l| l.contains("%__kargs_r0")), "{why}: {text:#?}");
    }
    // A load that writes its own base register ends the group after it.
    let text = lines(&fenced(&format!(
        "{tile}\tld.shared.u32 %r2, [%r2];\n\tld.shared.u32 %r3, [%r2+4];\n\tld.shared.u32 %r4, [%r2+8];\n"
    )));
    assert_eq!(clamps(&text), 2, "{text:#?}");
}

#[test]
fn named_variables_at_constant_offsets_inside_them_need_no_clamp() {
    let module = fenced(
        "\t.shared .align 4 .b8 tile[64];\n\tld.shared.u32 %r1, [tile+60];\n\tst.shared.v4.f32 [tile+16], {%f1, %f2, %f3, %f4};\n",
    );
    assert_eq!((module.accesses(), module.by_declaration()), (0, 3), "2 and the parameter load");
    let text = lines(&module);
    assert!(text.iter().any(|l| l == "ld.shared.u32 %r1, [tile+60];"), "{text:#?}");
    assert!(!text.iter().any(|l| l.contains("__kargs_v")), "nothing to note: no fence exit either");
    // Past the variable's end, or misaligned: clamped.
    for body in [
        "\t.shared .align 4 .b8 tile[64];\n\tld.shared.u32 %r1, [tile+64];\n",
        "\t.shared .align 4 .b8 tile[64];\n\tld.shared.u32 %r1, [tile+2];\n",
    ] {
        assert_eq!(fenced(body).accesses(), 1, "{body}");
    }
    // A parameter read only by its name, inside it.
    assert_eq!(refusal("\tld.param.u64 %rd2, [p+8];\n").reason, FenceRefusal::ParamAccess);
    assert_eq!(
        refusal("\tmov.u64 %rd2, p;\n\tld.param.u64 %rd3, [%rd2];\n").reason,
        FenceRefusal::ParamAccess
    );
}

#[test]
fn traps_exits_and_member_masks() {
    let text = lines(&fenced("\t@%p1 trap;\n\tbrkpt;\n\t@%p2 ret;\n\tst.global.u32 [%rd1], %r1;\n"));
    for line in [
        "mov.u32 %__kargs_w, 0;",
        "@%p1 mov.u32 %__kargs_w, 1;",
        "@%p1 bra $__kargs_exit;",
        "mov.u32 %__kargs_w, 1;",
        "@%p2 bra $__kargs_exit;",
        "bra.uni $__kargs_exit;",
        "$__kargs_exit:",
        "ld.param.u64 %__kargs_flag, [__kargs_fence_flag];",
        "setp.eq.u32 %__kargs_p, %__kargs_v, 0;",
        // One byte of the flag per reason: the moved access's (0), the trap's (1).
        "@!%__kargs_p st.global.u8 [%__kargs_flag], 1;",
        "setp.eq.u32 %__kargs_p, %__kargs_w, 0;",
        "@%__kargs_p ret;",
        "st.global.u8 [%__kargs_flag+1], 1;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    assert!(!text.iter().any(|l| l.starts_with("trap") || l.starts_with("brkpt")), "{text:#?}");
    // A mask that may leave out the executing thread gets it.
    let text = lines(&fenced(
        "\tshfl.sync.down.b32 %r1, %r2, 1, 31, %r3;\n\tbar.warp.sync %r3;\n\tvote.sync.any.pred %p1, %p2, -1;\n",
    ));
    assert_eq!(text.iter().filter(|l| *l == "mov.u32 %__kargs_lm, %lanemask_eq;").count(), 2, "{text:#?}");
    assert!(text.iter().any(|l| l == "or.b32 %__kargs_m, %__kargs_lm, %r3;"), "{text:#?}");
    assert!(text.iter().any(|l| l == "shfl.sync.down.b32 %r1, %r2, 1, 31, %__kargs_m;"), "{text:#?}");
    assert!(text.iter().any(|l| l == "vote.sync.any.pred %p1, %p2, -1;"), "a full mask stays: {text:#?}");
}

#[test]
fn cp_async_is_clamped_at_both_ends_and_its_group_instructions_pass() {
    let module = fenced(
        "\tcp.async.cg.shared.global [%r2], [%rd1], 16;\n\tcp.async.ca.shared.global [%r2+16], [%rd1+4], 4, 2;\n\
         \tcp.async.commit_group;\n\tcp.async.wait_group 0;\n\tcp.async.wait_all;\n",
    );
    // Two addresses each, the shared destination and the global source.
    assert_eq!(module.accesses(), 4);
    assert_eq!(module.widest_access(), 16);
    let text = lines(&module);
    for line in ["cp.async.commit_group;", "cp.async.wait_group 0;", "cp.async.wait_all;"] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    // A source size that is a register is not one the checker can bound.
    let e = refusal("\tcp.async.ca.shared.global [%r2], [%rd1], 4, %r3;\n");
    assert!(e.to_string().contains("cp.async"), "{e}");
}

#[test]
fn what_cannot_be_fenced_is_refused_by_name_with_its_line() {
    for (instruction, reason) in [
        ("call.uni (%r1), f, (%r2);", FenceRefusal::Call),
        ("brx.idx %r1, tbl;", FenceRefusal::IndirectBranch),
        ("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];", FenceRefusal::TextureOrSurface),
        ("suld.b.2d.b32.trap {%r1}, [%rd1, {%r2, %r3}];", FenceRefusal::TextureOrSurface),
        ("wmma.load.a.sync.aligned.row.m8n8k4.global.f64 {%r1}, [%rd1], %r3;", FenceRefusal::MatrixMemory),
        ("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r2];", FenceRefusal::MatrixMemory),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 64, [%r2];",
            FenceRefusal::BulkCopy,
        ),
        ("mbarrier.init.shared.b64 [%r1], 32;", FenceRefusal::BulkCopy),
        ("ld.shared::cluster.u32 %r1, [%r2];", FenceRefusal::NotAllowed),
        ("ld.global.L2::cache_hint.u32 %r1, [%rd1], %rd2;", FenceRefusal::NotAllowed),
        ("multimem.ld_reduce.global.add.u32 %r1, [%rd1];", FenceRefusal::BulkCopy),
        ("pmevent 1;", FenceRefusal::NotAllowed),
        ("alloca.u64 %rd2, 16;", FenceRefusal::NotAllowed),
        ("st.async.shared::cluster.u32 [%r1], %r2, [%r3];", FenceRefusal::NotAllowed),
        ("bar.sync %r1;", FenceRefusal::Barrier),
        ("bar.sync 0, %r1;", FenceRefusal::Barrier),
        ("ld.global.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f1}, [%rd1];", FenceRefusal::TooWide),
        ("ld.global.f32 %f1, [buffer];", FenceRefusal::Address),
        ("ld.f32 %f1, [%f2];", FenceRefusal::Address),
        ("mov.u64 %rd2, f;", FenceRefusal::FunctionAddress),
        (".pragma \"enable_smem_spilling\";", FenceRefusal::Pragma),
        ("mov.u64 %rd2, __kargs_table;", FenceRefusal::ReservedName),
    ] {
        let text = entry(&format!("\t{instruction}\n")).replace(
            ".visible .entry k(",
            ".extern .func (.param .b32 r) f(.param .b32 a);\n.visible .entry k(",
        );
        let e = fence_ptx(&text).unwrap_err();
        assert_eq!(e.reason, reason, "{instruction}: {e}");
        if !matches!(reason, FenceRefusal::ReservedName | FenceRefusal::Unreadable(_)) {
            assert_eq!(e.line, 16, "{instruction}: {e}");
        }
        if !matches!(reason, FenceRefusal::Pragma | FenceRefusal::ReservedName) {
            assert_eq!(e.statement, instruction.trim_end_matches(';'), "{e}");
        }
    }
}

#[test]
fn module_scope_refusals() {
    // A `.global` variable the fence cannot place at the start of the fence: declared
    // elsewhere, too large to copy in and out at every launch, or named in a form it does not
    // rewrite (a 32-bit move of its address; an address in another state space).
    for (variable, named) in [
        (".extern .global .align 4 .u32 counter;", "\tst.global.u32 [counter], %r1;\n"),
        (".global .align 4 .u32 counter[262145];", "\tst.global.u32 [counter], %r1;\n"),
        (".global .align 4 .u32 counter;", "\tmov.u32 %r2, counter;\n\tst.global.u32 [%rd1], %r2;\n"),
        (".global .align 4 .u32 counter;", "\tst.shared.u32 [counter], %r1;\n"),
        (".global .align 4 .f32 counter = 1.5;", "\tst.global.f32 [counter], %f1;\n"),
    ] {
        let e = fence_ptx(&entry(named).replace(HEADER, &format!("{HEADER}{variable}\n"))).unwrap_err();
        assert_eq!((e.line, e.reason), (4, FenceRefusal::ModuleGlobal), "{variable} {named}");
    }
    // What no instruction names is dropped, whatever its space: a kernel cannot reach it.
    let module = fence_ptx(&format!(
        "{HEADER}.global .align 4 .u32 counter;\n.const .align 1 .b8 ignore[1];\n.extern .func helper;\n"
    ))
    .unwrap();
    assert_eq!(module.dropped(), 3);
    assert!(!module.ptx().contains("counter") && !module.ptx().contains("helper"), "{}", module.ptx());
    let e = fence_ptx(&format!("{HEADER}.global .texref t;\n")).unwrap_err();
    assert_eq!(e.reason, FenceRefusal::TextureOrSurface);
    // A device function no call is left to run goes too.
    let module = fence_ptx(&format!("{HEADER}.func f()\n{{\n\tret;\n}}\n")).unwrap();
    assert_eq!((module.dropped(), module.ptx().contains(".func")), (1, false));
    let e = fence_ptx(".version 7.8\n.target sm_52\n.address_size 32\n").unwrap_err();
    assert_eq!(e.reason, FenceRefusal::AddressSize);
    let e = fence_ptx(&format!("{HEADER}/* open")).unwrap_err();
    assert_eq!(
        (e.line, e.reason),
        (4, FenceRefusal::Unreadable(kernel_args_ptx::ParseErrorKind::UnterminatedComment))
    );
    assert!(fence_ptx(&format!("{HEADER}.const .align 4 .u32 table[2] = {{1, 2}};\n")).is_ok());
    // Commented-out instructions are not instructions.
    let module = fenced("\t// ld.u32 %r1, [%rd1];\n\t/* call f; */\n");
    assert_eq!(module.accesses(), 0);
    // A fenced module is not fenced twice.
    let once = fenced("\tst.global.u32 [%rd1], %r1;\n");
    assert_eq!(fence_ptx(once.ptx()).unwrap_err().reason, FenceRefusal::ReservedName);
}

/// A device-side `assert` as nvcc 11.8 compiles it (`corpus/assert.ptx`'s call sequence).
fn assert_module(call_block: &str) -> String {
    format!(
        "{HEADER}.extern .func __assertfail\n(\n\t.param .b64 __assertfail_param_0,\n\t.param .b64 __assertfail_param_1,\n\
         \t.param .b32 __assertfail_param_2\n)\n;\n\
         .global .align 1 .b8 $str[3] = {{120, 62, 0}};\n\
         .visible .entry k(\n\t.param .u64 p\n)\n{{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<8>;\n\
         \tld.param.u64 %rd1, [p];\n\tld.global.u32 %r1, [%rd1];\n\tsetp.gt.s32 %p1, %r1, -1;\n\t@%p1 bra $L_ok;\n\
         \tmov.u64 %rd2, $str;\n\tcvta.global.u64 %rd3, %rd2;\n\tmov.u32 %r2, 7;\n{call_block}\
         $L_ok:\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}}\n"
    )
}

const ASSERT_CALL: &str = "\t{\n\t.reg .b32 temp_param_reg;\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd3;\n\
     \t.param .b64 param1;\n\tst.param.b64 [param1+0], %rd3;\n\t.param .b32 param2;\n\tst.param.b32 [param2+0], %r2;\n\
     \tcall.uni\n\t__assertfail,\n\t(\n\tparam0,\n\tparam1,\n\tparam2\n\t);\n\t}\n";

#[test]
fn an_assert_becomes_the_fence_exit_and_its_strings_go() {
    let module = fence_ptx(&assert_module(ASSERT_CALL)).unwrap();
    assert_eq!((module.asserts(), module.dropped()), (1, 2), "{}", module.ptx());
    let text = lines(&module);
    for gone in ["__assertfail", "$str", "call", "st.param", "mov.u32 %r2, 7;"] {
        assert!(!text.iter().any(|l| l.contains(gone)), "{gone} in {text:#?}");
    }
    // The trap's lowering: the flag, then the fence's exit.
    let at = text.iter().position(|l| l == "@%p1 bra $L_ok;").unwrap();
    assert_eq!(text[at + 1..at + 3], ["mov.u32 %__kargs_w, 1;", "bra $__kargs_exit;"], "{text:#?}");
    // A call sequence that does anything else is not an assert's: the call is refused by name.
    for other in [
        ASSERT_CALL.replace("st.param.b32 [param2+0], %r2;", "st.global.b32 [%rd1], %r2;"),
        ASSERT_CALL.replace("param2\n\t);", "p\n\t);"),
        ASSERT_CALL.replace("__assertfail,", "vprintf,"),
    ] {
        let e = fence_ptx(&assert_module(&other)).unwrap_err();
        assert!(
            matches!(
                e.reason,
                FenceRefusal::Call | FenceRefusal::ModuleGlobal | FenceRefusal::NestedVariable
            ),
            "{other}: {e}"
        );
    }
    // A guarded call is a guarded trap.
    let guarded = fence_ptx(&assert_module(&ASSERT_CALL.replace("call.uni", "@%p1 call.uni"))).unwrap();
    let text = lines(&guarded);
    assert!(text.iter().any(|l| l == "@%p1 mov.u32 %__kargs_w, 1;"), "{text:#?}");
    assert!(text.iter().any(|l| l == "@%p1 bra $__kargs_exit;"), "{text:#?}");
    // `__assertfail` must be the runtime's (declared `.extern`, no body of the module's).
    let own = assert_module(ASSERT_CALL).replace(".extern .func __assertfail", ".func __assertfail");
    assert!(fence_ptx(&own).is_err());
}

/// A module whose entry reads `table[i]` through a register, as nvcc compiles a lookup, with
/// `extra` after the load.
fn table_module(table: &str, extra: &str) -> String {
    entry(&format!(
        "\tmov.u64 %rd2, lut;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\
         \tld.global.nc.L1::no_allocate.u32 %r2, [%rd4];\n\tld.volatile.global.cg.u32 %r3, [lut+8];\n\tsetp.eq.u64 %p1, %rd4, %rd2;\n{extra}\
         \tst.global.u32 [%rd1], %r2;\n"
    ))
    .replace(HEADER, &format!("{HEADER}{table}\n"))
}

#[test]
fn a_table_the_module_only_reads_moves_to_constant_memory() {
    let table = ".global .align 4 .b8 lut[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};";
    let module = fence_ptx(&table_module(table, "")).unwrap();
    assert_eq!(module.tables(), 1);
    let text = lines(&module);
    assert!(text.iter().any(|l| l.starts_with(".const .align 16 .b8 lut[16] = {1, 0,")), "{text:#?}");
    assert!(text.iter().any(|l| l.starts_with("ld.const.u32 %r2, [%__kargs_a")), "{text:#?}");
    assert!(text.iter().any(|l| l == "ld.const.u32 %r3, [lut+8];"), "{text:#?}");
    assert!(!text.iter().any(|l| l.contains(".global") && l.contains("lut")), "{text:#?}");
    // Any use that is not a read leaves the table in global memory, where the fence places it
    // as a variable of the module, at the start of the fence (its bytes the initializer's).
    for extra in [
        "\tst.global.u32 [%rd4], %r2;\n",
        "\tatom.global.add.u32 %r3, [%rd2], 1;\n",
        "\tcvta.global.u64 %rd5, %rd2;\n\tld.u32 %r3, [%rd5];\n",
        "\tst.global.u64 [%rd1], %rd4;\n",
        "\tmov.b64 {%r4, %r5}, %rd2;\n",
        // A register that holds the table's address on one path and another on the other.
        "\t@%p1 mov.u64 %rd4, %rd1;\n\tld.global.u32 %r3, [%rd4];\n",
        "\tld.global.u64 %rd2, [%rd1];\n",
    ] {
        let module = fence_ptx(&table_module(table, extra)).unwrap();
        assert_eq!(module.tables(), 0, "{extra}");
        assert_eq!(module.variables(), [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0], "{extra}");
        let text = lines(&module);
        assert!(!text.iter().any(|l| l.contains("lut")), "{text:#?}");
        assert!(text.iter().any(|l| l == "mov.u64 %rd2, 0;"), "{text:#?}");
    }
    // Past the constant space's 64 KiB it stays in global memory too.
    let huge = ".global .align 4 .b8 lut[65537];";
    assert_eq!(fence_ptx(&table_module(huge, "")).unwrap().variables().len(), 65552);
}

/// The module's `.global` variables it writes (`__device__` variables) are placed at the start
/// of the fence, each aligned to 16, with their initializers' bytes; each name becomes its
/// offset there, which the kernel's global accesses are clamped with as any other offset.
#[test]
fn a_device_variable_is_placed_at_the_start_of_the_fence() {
    let variables = ".global .align 4 .u32 seeds[2] = {1, -2};\n.global .align 8 .f64 scale = 0d3FF0000000000000;\n\
        .global .align 8 .u64 seen;\n.global .align 4 .u32 unused;\n";
    let body = "\tmov.u64 %rd2, seeds;\n\tcvta.global.u64 %rd3, seeds+8;\n\tatom.global.add.u32 %r1, [seeds+4], 1;\n\
        \tld.global.u64 %rd4, [scale];\n\tst.global.u64 [%rd1], %rd2;\n\tst.u64 [%rd3], %rd4;\n\tst.u64 [seen], %rd4;\n\
        \tld.global.u32 %r2, [%rd2+4];\n";
    let module = fence_ptx(&entry(body).replace(HEADER, &format!("{HEADER}{variables}"))).unwrap();
    let mut expected = vec![0u8; 48];
    expected[..8].copy_from_slice(&[1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]);
    expected[16..24].copy_from_slice(&1.0f64.to_le_bytes());
    assert_eq!(module.variables(), expected);
    assert_eq!(module.dropped(), 1, "the unused one");
    let text = lines(&module);
    // A global access at a constant offset that every fence holds (within `MIN_FENCE_LEN`, or the
    // module's variables), a name's or a register's holding one (`mov.u64 %rd2, 0`), is the
    // fence's base plus the offset; the rest are clamped as any other offset.
    for line in [
        "mov.u64 %rd2, 0;",
        "mov.u64 %rd3, 8;",
        "atom.global.add.u32 %r1, [%__kargs_gb+4], 1;",
        "ld.global.u64 %rd4, [%__kargs_gb+16];",
        "ld.global.u32 %r2, [%__kargs_gb+4];",
        "st.u64 [%__kargs_a0], %rd4;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line}: {text:#?}");
    }
    for text in [module.ptx(), module.aligned_ptx()] {
        assert_eq!(check(text).map(|r| r.fence_min_len), Ok(24), "the furthest constant access's end");
        for (what, broken) in [
            ("past `MAX_REACH`", text.replace("[%__kargs_gb+16]", "[%__kargs_gb+65536]")),
            ("misaligned", text.replace("[%__kargs_gb+16]", "[%__kargs_gb+12]")),
            ("before the base", text.replace("[%__kargs_gb+16]", "[%__kargs_gb+-8]")),
        ] {
            assert_ne!(broken, text, "{what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::Unproven), "{what}");
        }
    }
    assert!(
        !text.iter().any(|l| l.contains("seeds") || l.contains("scale") || l.contains("seen")),
        "{text:#?}"
    );
    // Every access through one of them is clamped into the fence, like any global access.
    assert_eq!(module.accesses(), 6);
    // A module without one has none.
    assert!(fenced("\tst.global.u32 [%rd1], %r1;\n").variables().is_empty());
}

/// The forms a text scanner misread, each as ptxas reads it (checked with ptxas 12.9): every
/// access is clamped, and nothing of the input reaches the output unread.
#[test]
fn the_forms_a_scanner_misreads_are_read_as_ptxas_reads_them() {
    for (body, accesses) in [
        // A pragma, then an access on the same line; a comment marker after it.
        ("\t.pragma \"nounroll\"; st.global.u32 [%rd1], %r1; // */\n", 1),
        // Whitespace and comments inside an instruction.
        ("\tst /* x */ .global\n\t.u32 [ %rd1 + 4 ] , %r1;\n", 1),
        ("\tst .global .u32 [%rd1], %r1;\n", 1),
        // A guard however spaced, several statements on a line, a label before them.
        (
            "\tsetp.eq.u32 %p1, %r1, 0; @ %p1 bra L1; st.global.u32 [%rd1], %r1;\nL1: @ ! %p1 st.global.u32 [%rd1+8], %r1; ld.u32 %r2, [%rd1];\n",
            3,
        ),
        // A directive and a statement on one line.
        ("\t.loc 1 2 3 st.global.u32 [%rd1], %r1;\n", 1),
        ("\t{ .reg .b64 %t; add.s64 %t, %rd1, 8; st.global.u32 [%t], %r1; }\n", 1),
    ] {
        let module = fenced(body);
        assert_eq!(module.accesses(), accesses, "{body}");
        let text = lines(&module);
        assert!(
            !text.iter().any(|l| (l.starts_with("st.") || l.starts_with("@"))
                && l.contains("[%rd1")
                && !l.contains("ld.param")),
            "{body}: {text:#?}"
        );
        assert!(!module.ptx().contains("/*") && !module.ptx().contains(".loc"), "printed, not copied");
    }
}

/// A pragma whose string holds comment markers is read as the string it is: the fence does not
/// know the pragma and says so; the instruction after it is read too.
#[test]
fn a_pragma_with_comment_markers_is_refused_by_name() {
    for body in [
        "\t.pragma \"nounroll // \"; st.global.u32 [%rd1], %r1;\n",
        "\t.pragma \"/*\"; st.global.u32 [%rd1], %r1; // */\n",
    ] {
        let e = refusal(body);
        assert_eq!((e.line, &e.reason), (15, &FenceRefusal::Pragma), "{e}");
    }
    let text = entry("\t.pragma \"nounroll // \"; trap;\n");
    let module = kernel_args_ptx::parse(&text).unwrap();
    let body = module.entry("k").unwrap().body.as_ref().unwrap();
    assert!(
        body.statements
            .iter()
            .any(|s| matches!(s, kernel_args_ptx::Statement::Instruction(i) if i.opcode == "trap"))
    );
}

/// Rewritten modules broken on purpose: each a mistake a rewriter could make, each a finding.
#[test]
fn the_checker_finds_what_a_rewriter_could_get_wrong() {
    let base = fenced(
        "\t.shared .align 4 .b8 tile[64];\n\tst.global.u32 [%rd1], %r1;\n\tld.shared.u32 %r2, [%r3];\n\tld.u32 %r4, [%rd1];\n",
    );
    let text = base.ptx().to_owned();
    assert!(check(&text).is_ok());
    let first = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} in {text}"));
    let edits: Vec<(&str, String, FindingKind)> = vec![
        (
            "a clamp left out",
            text.replacen("\tmin.u32\t%__kargs_k, %__kargs_u, %__kargs_g4;\n", "", 1),
            FindingKind::Unproven,
        ),
        (
            "a 32-bit register that is no limit",
            text.replacen("%__kargs_k, %__kargs_u, %__kargs_g4;", "%__kargs_k, %__kargs_u, %__kargs_n;", 1),
            FindingKind::Unproven,
        ),
        (
            "another window's limit",
            text.replacen("%__kargs_k, %__kargs_u, %__kargs_g4;", "%__kargs_k, %__kargs_u, %__kargs_s4;", 1),
            FindingKind::Unproven,
        ),
        (
            "a limit from the length less nothing",
            text.replacen("sub.u64\t%__kargs_t, %__kargs_gl, 4;", "mov.u64\t%__kargs_t, %__kargs_gl;", 1),
            FindingKind::Unproven,
        ),
        (
            "the rounding left out",
            text.replacen("\tand.b32\t%__kargs_k, %__kargs_k, -4;\n", "", 1),
            FindingKind::Unproven,
        ),
        (
            "the widening left out",
            text.replacen("\tcvt.u64.u32\t%__kargs_c, %__kargs_k;\n", "", 1),
            FindingKind::Unproven,
        ),
        (
            "a group's access past its reach",
            text.replacen("[%__kargs_a0], %r1;", "[%__kargs_a0+4], %r1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a label between the clamp and the access",
            {
                let at = first("\tst.global.u32\t[%__kargs_a0], %r1;");
                format!("{}L_join:\n{}", &text[..at], &text[at..])
            },
            FindingKind::Unproven,
        ),
        (
            "a guarded clamp",
            text.replacen(
                "\tadd.u64\t%__kargs_a0, %__kargs_c, %__kargs_gb;",
                "\t@%p1 add.u64\t%__kargs_a0, %__kargs_c, %__kargs_gb;",
                1,
            ),
            FindingKind::Unproven,
        ),
        (
            "the shared clamp on the global base",
            text.replacen(
                "add.u32\t%__kargs_j, %__kargs_k, %__kargs_sb;\n\tcvt.u64.u32\t%__kargs_a0, %__kargs_j;",
                "cvt.u64.u32\t%__kargs_c, %__kargs_k;\n\tadd.u64\t%__kargs_a0, %__kargs_c, %__kargs_gb;",
                1,
            ),
            FindingKind::Unproven,
        ),
        (
            "the shared clamp on the window's end",
            text.replacen(
                "add.u32\t%__kargs_j, %__kargs_k, %__kargs_sb;",
                "add.u32\t%__kargs_j, %__kargs_k, %__kargs_se;",
                1,
            ),
            FindingKind::Unproven,
        ),
        (
            "a window written after the windows",
            {
                let at = first("\tst.global.u32\t[%__kargs_a0], %r1;");
                format!("{}\tadd.u64\t%__kargs_gb, %__kargs_gb, 64;\n{}", &text[..at], &text[at..])
            },
            FindingKind::FenceRegister,
        ),
        (
            "an instruction of the kernel writing a fence register",
            {
                let at = first("\tst.global.u32\t[%__kargs_a0], %r1;");
                format!("{}\tld.global.u64\t%__kargs_a0, [%__kargs_a0];\n{}", &text[..at], &text[at..])
            },
            FindingKind::FenceRegister,
        ),
        (
            "an offset on the clamped address",
            text.replacen("st.global.u32\t[%__kargs_a0], %r1;", "st.global.u32\t[%__kargs_a0+4], %r1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a wider access than the clamp",
            text.replacen("st.global.u32\t[%__kargs_a0], %r1;", "st.global.u64\t[%__kargs_a0], %rd1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a shared address for a global access",
            text.replacen("ld.shared.u32\t%r2, [%__kargs_a0];", "ld.global.u32\t%r2, [%__kargs_a0];", 1),
            FindingKind::Unproven,
        ),
        (
            "a trap",
            text.replacen("\tbar.sync", "\ttrap;\n\tbar.sync", 1).replacen(
                "\tld.shared.u32",
                "\ttrap;\n\tld.shared.u32",
                1,
            ),
            FindingKind::NotAllowed,
        ),
        (
            "a fence register in a nested block",
            text.replacen(
                "\tld.shared.u32\t%r2, [%__kargs_a0];",
                "\t{\n\t.reg .b64 %__kargs_a0;\n\tld.shared.u32\t%r2, [%__kargs_a0];\n\t}",
                1,
            ),
            FindingKind::FenceRegister,
        ),
        (
            "a ret before the fence's exit",
            text.replacen(
                "\tld.shared.u32\t%r2, [%__kargs_a0];",
                "\tld.shared.u32\t%r2, [%__kargs_a0];\n\tret;",
                1,
            ),
            FindingKind::Exit,
        ),
        (
            "another store through the flag",
            text.replacen("st.global.u8\t[%__kargs_flag], 1;", "st.global.u8\t[%__kargs_flag], %r1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a wider store through the flag",
            text.replacen("st.global.u8\t[%__kargs_flag], 1;", "st.global.u32\t[%__kargs_flag], 1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a store past the flag",
            text.replacen("st.global.u8\t[%__kargs_flag], 1;", "st.global.u8\t[%__kargs_flag+4], 1;", 1),
            FindingKind::Unproven,
        ),
        (
            "a window without its padding",
            text.replacen(
                "add.u32\t%__kargs_se, %__kargs_sb, 64;",
                "add.u32\t%__kargs_se, %__kargs_sb, 8;",
                1,
            ),
            FindingKind::Unproven,
        ),
        (
            "a window past its variable",
            text.replacen(
                "add.u32\t%__kargs_se, %__kargs_sb, 64;",
                "add.u32\t%__kargs_se, %__kargs_sb, 128;",
                1,
            ),
            FindingKind::Unproven,
        ),
        (
            "a variable aligned below 16",
            text.replacen(".shared .align 16 .b8 tile[64];", ".shared .align 4 .b8 tile[64];", 1),
            FindingKind::Unproven,
        ),
        (
            "the hidden parameters missing",
            text.replacen(",\n\t.param .u64 __kargs_fence_flag", "", 1),
            FindingKind::HiddenParams,
        ),
        (
            "a ret, before any access, after the flag's register is set",
            text.replacen("mov.u32\t%__kargs_v, 0;", "mov.u32\t%__kargs_v, 1;\n\tret;", 1),
            FindingKind::Exit,
        ),
        (
            "a ret, before any access, after a label (a later branch may come back to it)",
            text.replacen("mov.u32\t%__kargs_v, 0;", "mov.u32\t%__kargs_v, 0;\n$L__back:\n\tret;", 1),
            FindingKind::Exit,
        ),
    ];
    for (what, broken, kind) in edits {
        assert_ne!(broken, text, "{what}: the edit applies");
        match check(&broken) {
            Ok(_) => panic!("{what}: no finding in\n{broken}"),
            Err(finding) => assert_eq!(finding.kind, kind, "{what}: {finding}"),
        }
    }
    // Before anything is noted a thread has nothing to report: an exit there skips nothing.
    let early = text.replacen("mov.u32\t%__kargs_v, 0;", "mov.u32\t%__kargs_v, 0;\n\t@%p1 ret;", 1);
    assert_ne!(early, text);
    assert!(check(&early).is_ok(), "{early}");
}

/// The fixtures' fenced text is committed (`kernels/fenced/`), so that a change in the
/// rewriter shows as a diff and CI's `ptxas` (scripts/ptxas-check.sh) assembles exactly what
/// the rewriter makes. `KARGS_UPDATE_GOLDEN=1` rewrites the files.
#[test]
#[cfg_attr(miri, ignore = "reads the fixture files; Miri isolates the file system")]
fn the_fixtures_fenced_are_the_committed_files() {
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let update = std::env::var_os("KARGS_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut checked = 0;
    for (dir, fenced_dir) in [
        (kernels.clone(), kernels.join("fenced")),
        (kernels.join("broken"), kernels.join("fenced/broken")),
        (kernels.join("attacks"), kernels.join("fenced/attacks")),
    ] {
        let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            if path.extension().is_none_or(|e| e != "ptx") {
                continue;
            }
            let ptx = std::fs::read_to_string(&path).unwrap();
            let Ok(fenced) = fence_ptx(&ptx) else { continue };
            // Each entry parses again: its own parameters, then its proofs' and the fence's four.
            for entry in fenced.entries() {
                let (mut plain, mut with_fence) =
                    (crate::KernelRegistry::new(), crate::KernelRegistry::new());
                plain.register(1, &ptx, entry, crate::Sandbox::Undeclared).unwrap();
                with_fence.register(1, fenced.ptx(), entry, crate::Sandbox::Undeclared).unwrap();
                let sizes = |r: &crate::KernelRegistry| r.get(1).unwrap().signature().unwrap().param_sizes();
                let mut want = sizes(&plain);
                let hidden = fenced.proofs(entry).iter().flat_map(Proof::param_names).count();
                want.extend(std::iter::repeat_n(8, hidden + FENCE_PARAMS.len()));
                assert_eq!(sizes(&with_fence), want, "{entry}");
            }
            let golden = fenced_dir.join(path.file_name().unwrap());
            if update {
                std::fs::create_dir_all(&fenced_dir).unwrap();
                std::fs::write(&golden, fenced.ptx()).unwrap();
            }
            let committed = std::fs::read_to_string(&golden).unwrap_or_default();
            assert!(
                committed == fenced.ptx(),
                "{} differs from the fenced {} (KARGS_UPDATE_GOLDEN=1 rewrites it)",
                golden.display(),
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 14, "every fixture and every broken kernel: {checked}");
}

#[test]
fn an_entry_without_parameters_gets_the_hidden_ones() {
    let module = fence_ptx(&format!("{HEADER}.visible .entry k()\n{{\n\tret;\n}}\n")).unwrap();
    assert!(module.ptx().contains(".entry k(\n\t.param .u64 __kargs_fence_base,"), "{}", module.ptx());
    assert_eq!(module.entries(), ["k"]);
}

/// The attack kernels (`kernels/attacks/`): those the fence refuses, by name; the others are
/// fenced (their fenced text is committed, and the emulator's and the pipeline's tests launch
/// them).
#[test]
#[cfg_attr(miri, ignore = "reads the attack files; Miri isolates the file system")]
fn the_attacks_are_refused_by_name_or_fenced() {
    let attacks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/attacks");
    let read = |name: &str| std::fs::read_to_string(attacks.join(name)).unwrap();
    for (file, reason) in
        [("pragma_comment.ptx", FenceRefusal::Pragma), ("pragma_block_comment.ptx", FenceRefusal::Pragma)]
    {
        assert_eq!(fence_ptx(&read(file)).unwrap_err().reason, reason, "{file}");
    }
    // (clamped, proven): a guest's index into a pointer is confined by a ranged proof.
    for (file, clamped, proven) in [
        ("wmma_load.ptx", 3, 0),
        ("wmma_shared_overrun.ptx", 13, 0),
        ("guard_spaced.ptx", 0, 1),
        ("loc_then_store.ptx", 0, 1),
        // Its read at a constant offset is proven (a fixed proof); the other is clamped.
        ("ldu_read.ptx", 1, 1),
        ("guard_bypass.ptx", 0, 1),
        ("shared_overrun.ptx", 3, 1),
        // Its eight stores at constant places in the frame name it (lower.rs); the overrun is clamped.
        ("local_overrun.ptx", 2, 1),
        ("generic_shared.ptx", 3, 1),
        ("trap.ptx", 0, 1),
    ] {
        let module = fence_ptx(&read(file)).unwrap();
        assert_eq!((module.accesses(), module.proven()), (clamped, proven), "{file}");
    }
    let ranged = Proof { pointer: 0, kind: ProofKind::Ranged { signed: false, reach: 4 }, size: 4, align: 4 };
    for (file, entry) in [("guard_spaced.ptx", "guard_spaced"), ("loc_then_store.ptx", "loc_then_store")] {
        let module = fence_ptx(&read(file)).unwrap();
        assert_eq!(module.proofs(entry), [ranged], "{file}");
    }
}

/// A body with a loop of every guard: `$L_a` closed by an unguarded branch, `$L_b` by a guarded
/// one, `$L_c` by a negated one, a self-loop, and a forward branch (not counted); `$L_w`, whose
/// loop waits at `bar.sync` around an inner loop `$L_wi` that does not wait; `$L_v`, whose loop
/// waits at `vote.sync`.
const LOOPS: &str = "\tmov.u32 %r1, 0;\n$L_a:\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 10;\n\
    \t@%p1 bra $L_fwd;\n\tbra.uni $L_a;\n$L_fwd:\n$L_b:\n\tadd.u32 %r1, %r1, 1;\n\t@%p1 bra $L_b;\n\
    $L_c:\n\tsetp.ge.u32 %p2, %r1, 20;\n\t@!%p2 bra $L_c;\n$L_self:\n\t@%p3 bra $L_self;\n\
    $L_w:\n\tbar.sync 0;\n$L_wi:\n\tadd.u32 %r2, %r2, 1;\n\t@%p1 bra $L_wi;\n\t@%p2 bra $L_w;\n\
    $L_v:\n\tvote.sync.any.pred %p3, %p1, -1;\n\t@%p3 bra $L_v;\n";

#[test]
fn every_backward_branch_is_counted_against_the_budget_and_no_forward_one() {
    let module = fenced(LOOPS);
    assert_eq!(module.counted_branches(), 7);
    assert_eq!(module.leaving_branches(), 4);
    let report = check(module.ptx()).unwrap();
    assert_eq!((report.counted, report.leaving), (7, 4), "the checker finds each counted");
    let text = lines(&module);
    // The budget's load, in the leading run, before the kernel's first instruction.
    let load = text.iter().position(|l| l == "ld.param.u32 %__kargs_b, [__kargs_fence_budget];").unwrap();
    assert!(load < text.iter().position(|l| l == "ld.param.u64 %rd1, [p];").unwrap(), "{text:#?}");
    let at = |branch: &str| {
        text.iter().position(|l| l == branch).unwrap_or_else(|| panic!("{branch} in {text:#?}"))
    };
    let before = |branch: &str| text[at(branch) - 3..at(branch)].to_vec();
    // Where the loop waits for other threads, or the branch is unguarded, a thread that would
    // take it with its budget spent leaves the kernel through the budget's way out.
    assert_eq!(
        before("bra.uni $L_a;"),
        [
            "setp.eq.u32 %__kargs_q, %__kargs_b, 0;",
            "@%__kargs_q bra $__kargs_budget;",
            "sub.u32 %__kargs_b, %__kargs_b, 1;"
        ]
    );
    assert_eq!(
        before("@%p2 bra $L_w;"),
        [
            "setp.eq.and.u32 %__kargs_q, %__kargs_b, 0, %p2;",
            "@%__kargs_q bra $__kargs_budget;",
            "@%p2 sub.u32 %__kargs_b, %__kargs_b, 1;"
        ]
    );
    assert_eq!(before("@%p3 bra $L_v;")[2], "@%p3 sub.u32 %__kargs_b, %__kargs_b, 1;");
    // Elsewhere the branch goes only while the budget lasts, and a thread that falls through
    // spent sets the budget's byte and runs on after the loop.
    let leaves = |branch: &str, guard: &str| {
        let i = at(branch);
        assert_eq!(
            text[i - 2..i + 4],
            [
                format!("setp.ne.and.u32 %__kargs_go, %__kargs_b, 0, {guard};"),
                "@%__kargs_go sub.u32 %__kargs_b, %__kargs_b, 1;".to_owned(),
                branch.to_owned(),
                format!("setp.eq.and.u32 %__kargs_q, %__kargs_b, 0, {guard};"),
                "ld.param.u64 %__kargs_flag, [__kargs_fence_flag];".to_owned(),
                "@%__kargs_q st.global.u8 [%__kargs_flag+2], 1;".to_owned(),
            ],
            "{branch}"
        );
    };
    leaves("@%__kargs_go bra $L_b;", "%p1");
    leaves("@%__kargs_go bra $L_c;", "!%p2");
    leaves("@%__kargs_go bra $L_self;", "%p3");
    leaves("@%__kargs_go bra $L_wi;", "%p1");
    // Where no warp-synchronous instruction follows a loop (a `bar.sync` is not one), its exit
    // costs less than the flag's store after a leaving branch: every loop keeps the exit.
    let before_vote = LOOPS.split("$L_v:").next().unwrap();
    let exits = fenced(before_vote);
    assert_eq!((exits.counted_branches(), exits.leaving_branches()), (6, 0));
    assert_eq!(
        text.iter().filter(|l| l.starts_with("@%__kargs_q bra")).count(),
        3,
        "the forward branch is not counted"
    );
    // The budget's way out: its byte of the flag, then the fence's exit.
    let out = text.iter().position(|l| l == "$__kargs_budget:").unwrap();
    assert_eq!(
        text[out + 1..out + 4],
        [
            "ld.param.u64 %__kargs_flag, [__kargs_fence_flag];",
            "st.global.u8 [%__kargs_flag+2], 1;",
            "$__kargs_exit:"
        ]
    );
    // A body without a backward branch has no budget.
    let straight = fenced("\tld.global.u32 %r1, [%rd1];\n");
    assert_eq!(straight.counted_branches(), 0);
    let straight = lines(&straight);
    assert!(
        !straight.iter().any(|l| l.contains("__kargs_b") || l.contains("__kargs_budget;")),
        "{straight:#?}"
    );
}

#[test]
fn the_checker_finds_every_uncounted_backward_branch() {
    let module = fenced(LOOPS);
    let text = module.ptx().to_owned();
    assert!(check(&text).is_ok());
    let count_a = "\tsetp.eq.u32\t%__kargs_q, %__kargs_b, 0;\n\t@%__kargs_q bra\t$__kargs_budget;\n\tsub.u32\t%__kargs_b, %__kargs_b, 1;\n";
    assert!(text.contains(count_a), "{text}");
    let edits = [
        ("a backward branch without its count", text.replacen(count_a, "", 1)),
        ("the count without its test", text.replacen("\tsetp.eq.u32\t%__kargs_q, %__kargs_b, 0;\n", "", 1)),
        (
            "the count without its way out",
            text.replacen("\t@%__kargs_q bra\t$__kargs_budget;\n\tsub.u32", "\tsub.u32", 1),
        ),
        (
            "the count without its decrement",
            text.replacen("\t@%p2 sub.u32\t%__kargs_b, %__kargs_b, 1;\n", "", 1),
        ),
        (
            "a decrement under another guard than the branch's",
            text.replacen(
                "\t@%p2 sub.u32\t%__kargs_b, %__kargs_b, 1;",
                "\t@%p1 sub.u32\t%__kargs_b, %__kargs_b, 1;",
                1,
            ),
        ),
        ("a test of the other polarity", text.replacen("%__kargs_b, 0, !%p2;", "%__kargs_b, 0, %p2;", 1)),
        (
            "a decrement of 0",
            text.replacen(
                "\tsub.u32\t%__kargs_b, %__kargs_b, 1;",
                "\tsub.u32\t%__kargs_b, %__kargs_b, 0;",
                1,
            ),
        ),
        (
            "a label between the count and its branch",
            text.replacen(
                "\tsub.u32\t%__kargs_b, %__kargs_b, 1;\n",
                "\tsub.u32\t%__kargs_b, %__kargs_b, 1;\n$L_in:\n",
                1,
            ),
        ),
        (
            "an instruction between the count and its branch",
            text.replacen(
                "\tsub.u32\t%__kargs_b, %__kargs_b, 1;\n",
                "\tsub.u32\t%__kargs_b, %__kargs_b, 1;\n\tadd.u32\t%r1, %r1, 1;\n",
                1,
            ),
        ),
        (
            "the budget refilled in the loop",
            text.replacen("$L_b:\n", "$L_b:\n\tmov.u32\t%__kargs_b, 1000;\n", 1),
        ),
        (
            "the budget loaded again in the loop",
            text.replacen("$L_b:\n", "$L_b:\n\tld.param.u32\t%__kargs_b, [__kargs_fence_budget];\n", 1),
        ),
        (
            "the budget never loaded",
            text.replacen("\tld.param.u32\t%__kargs_b, [__kargs_fence_budget];\n", "", 1),
        ),
        (
            "a branch after the budget's way out",
            text.replacen("$__kargs_exit:\n", "$__kargs_exit:\n\tbra.uni\t$__kargs_budget;\n", 1),
        ),
        (
            "the way out without the budget's byte",
            text.replacen("\tst.global.u8\t[%__kargs_flag+2], 1;\n", "", 1),
        ),
        (
            "the way out setting another reason's byte",
            text.replacen(
                "\tst.global.u8\t[%__kargs_flag+2], 1;\n",
                "\tst.global.u8\t[%__kargs_flag+1], 1;\n",
                1,
            ),
        ),
        (
            "a leaving branch without its test",
            text.replacen("\tsetp.ne.and.u32\t%__kargs_go, %__kargs_b, 0, %p1;\n", "", 1),
        ),
        (
            "a leaving branch without its decrement",
            text.replacen(
                "\t@%__kargs_go sub.u32\t%__kargs_b, %__kargs_b, 1;\n\t@%__kargs_go bra\t$L_b",
                "\t@%__kargs_go bra\t$L_b",
                1,
            ),
        ),
        (
            "a leaving branch under the kernel's guard, not the count's",
            text.replacen("\t@%__kargs_go bra\t$L_b;", "\t@%p1 bra\t$L_b;", 1),
        ),
        (
            "a leaving branch marked uniform",
            text.replacen("\t@%__kargs_go bra\t$L_b;", "\t@%__kargs_go bra.uni\t$L_b;", 1),
        ),
        (
            "a leaving branch's test against another bound",
            text.replacen("%__kargs_go, %__kargs_b, 0, %p1;", "%__kargs_go, %__kargs_b, 1, %p1;", 1),
        ),
        (
            "a leaving branch without the budget's byte after it",
            text.replacen("\t@%__kargs_q st.global.u8\t[%__kargs_flag+2], 1;\n", "", 1),
        ),
        (
            "a leaving branch setting another reason's byte",
            text.replacen(
                "\t@%__kargs_q st.global.u8\t[%__kargs_flag+2], 1;",
                "\t@%__kargs_q st.global.u8\t[%__kargs_flag+1], 1;",
                1,
            ),
        ),
        (
            "a leaving branch's byte set under another test than its branch's",
            text.replacen(
                "\tsetp.eq.and.u32\t%__kargs_q, %__kargs_b, 0, %p1;\n",
                "\tsetp.eq.and.u32\t%__kargs_q, %__kargs_b, 0, %p2;\n",
                1,
            ),
        ),
        (
            "an instruction between a leaving branch and its byte",
            text.replacen(
                "\t@%__kargs_go bra\t$L_b;\n",
                "\t@%__kargs_go bra\t$L_b;\n\tadd.u32\t%r1, %r1, 1;\n",
                1,
            ),
        ),
        (
            "the test written by the kernel",
            text.replacen("$L_c:\n", "$L_c:\n\tsetp.eq.u32\t%__kargs_q, %r1, 0;\n", 1),
        ),
    ];
    for (what, broken) in edits {
        assert_ne!(broken, text, "{what}: the edit applies");
        match check(&broken) {
            Ok(_) => panic!("{what}: no finding in\n{broken}"),
            Err(finding) => assert_eq!(finding.kind, FindingKind::Uncounted, "{what}: {finding}"),
        }
    }
}

/// A module whose entry calls `scale` twice (nvcc's call sequence), `scale` calling `twice`:
/// a `.local` array, a guarded `ret`, labels, a parameter of each size.
const CALLS: &str = ".version 7.8\n.target sm_52\n.address_size 64\n\
    .func (.param .b32 twice_ret) twice(.param .b32 twice_x)\n{\n\t.reg .b32 %r<3>;\n\
    \tld.param.b32 %r1, [twice_x];\n\tadd.s32 %r2, %r1, %r1;\n\tst.param.b32 [twice_ret+0], %r2;\n\tret;\n}\n\
    .func (.param .b32 scale_ret) scale(.param .b64 scale_p, .param .b32 scale_i, .param .b16 scale_h)\n{\n\
    \t.local .align 4 .b8 depot[16];\n\t.reg .pred %p<2>;\n\t.reg .b16 %h<2>;\n\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<5>;\n\
    \tld.param.u64 %rd1, [scale_p];\n\tld.param.u32 %r1, [scale_i];\n\tld.param.u16 %h1, [scale_h];\n\
    \tmov.u32 %r5, 0;\n\tsetp.lt.s32 %p1, %r1, 0;\n\t@%p1 bra $L_neg;\n\
    \tmul.wide.s32 %rd2, %r1, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tld.global.u32 %r2, [%rd3];\n\
    \tst.local.u32 [depot], %r2;\n\tld.local.u32 %r3, [depot];\n\
    \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r3;\n\t.param .b32 retval0;\n\
    \tcall.uni (retval0), twice, (param0);\n\tld.param.b32 %r5, [retval0+0];\n\t}\n\
    \tst.param.b32 [scale_ret+0], %r5;\n\t@%p1 ret;\n\
    $L_neg:\n\tst.param.b32 [scale_ret+0], %r5;\n\tret;\n}\n\
    .visible .entry k(.param .u64 k_p)\n{\n\t.reg .b16 %h<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\
    \tld.param.u64 %rd1, [k_p];\n\tmov.u32 %r1, %tid.x;\n\tmov.u16 %h1, 3;\n\
    CALL\tmov.u32 %r1, 1;\n\
    CALL\tld.global.u32 %r3, [%rd1];\n\tadd.s32 %r3, %r3, %r2;\n\tst.global.u32 [%rd1], %r3;\n\tret;\n}\n";

const CALL_SEQUENCE: &str = "\t{\n\t.reg .b32 temp_param_reg;\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd1;\n\
    \t.param .b32 param1;\n\tst.param.b32 [param1+0], %r1;\n\t.param .b16 param2;\n\tst.param.b16 [param2+0], %h1;\n\
    \t.param .b32 retval0;\n\tcall.uni (retval0),\n\tscale,\n\t(\n\tparam0,\n\tparam1,\n\tparam2\n\t);\n\
    \tld.param.b32 %r2, [retval0+0];\n\t}\n";

#[test]
fn calls_of_the_modules_own_device_functions_are_inlined_and_fenced() {
    let module = fence_ptx(&CALLS.replace("CALL", CALL_SEQUENCE)).unwrap();
    // Two calls of `scale`, each with its call of `twice`; both functions gone.
    assert_eq!((module.inlined(), module.dropped()), (4, 2), "{}", module.ptx());
    let text = lines(&module);
    assert!(!text.iter().any(|l| l.starts_with("call") || l.contains(".func")), "{text:#?}");
    // Every copy has its own names: at the entry's top, each call of `scale` gets its depot and
    // a `.local` copy of each of its three parameters and its return value, each call of
    // `twice` two; four return labels.
    let locals: Vec<&String> = text.iter().filter(|l| l.starts_with(".local")).collect();
    assert_eq!(locals.len(), 2 * 5 + 2 * 2, "{text:#?}");
    assert!(text.contains(&".local .align 16 .b8 _kinl0v_depot[16];".to_owned()), "{text:#?}");
    assert!(text.contains(&".local .align 16 .b8 _kinl1v_depot[16];".to_owned()), "{text:#?}");
    let returns: std::collections::BTreeSet<&String> =
        text.iter().filter(|l| l.ends_with("return:")).collect();
    assert_eq!(returns.len(), 4, "{text:#?}");
    // The arguments and results pass through their `.local` copies at the same offsets; the
    // callee's registers and labels are renamed; its global access is fenced (one per copy of
    // `scale`, and the entry's own two), and its `.local` accesses need no clamp.
    for line in [
        "st.local.b64 [_kinl0g_p0], %rd1;",
        "st.local.b16 [_kinl0g_p2], %h1;",
        "ld.local.u64 %_kinl0r_rd1, [_kinl0g_p0];",
        "@%_kinl0r_p1 bra $_kinl0l_$L_neg;",
        "@%_kinl0r_p1 bra $_kinl0g_return;",
        "ld.local.b32 %r2, [_kinl0g_r0];",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    assert_eq!(module.accesses(), 4, "{text:#?}");
    assert!(module.by_declaration() >= 4 * 2 + 2 * 4, "the copies' and depots' accesses: {text:#?}");
}

#[test]
fn a_call_the_fence_cannot_inline_is_refused_by_name() {
    // Recursion: inlined to the deepest nesting, and the call left is refused.
    let recursive = ".version 7.8\n.target sm_52\n.address_size 64\n\
        .func f()\n{\n\t{\n\tcall.uni f, ();\n\t}\n\tret;\n}\n\
        .visible .entry k()\n{\n\t{\n\tcall.uni f, ();\n\t}\n\tret;\n}\n";
    let e = fence_ptx(recursive).unwrap_err();
    assert!(matches!(e.reason, FenceRefusal::Call | FenceRefusal::DeviceFunction), "{e}");
    // A callee that takes its parameter's address, or a call of a declaration without a body.
    for module in [
        CALLS.replace("CALL", CALL_SEQUENCE).replace("ld.param.u32 %r1, [scale_i];", "mov.u64 %rd4, scale_i;"),
        CALLS.replace("CALL", CALL_SEQUENCE).replace(
            ".func (.param .b32 scale_ret) scale(.param .b64 scale_p, .param .b32 scale_i, .param .b16 scale_h)\n{",
            ".extern .func (.param .b32 scale_ret) scale(.param .b64 scale_p, .param .b32 scale_i, .param .b16 scale_h);\n\
             .func (.param .b32 unused_ret) unused(.param .b64 scale_p, .param .b32 scale_i, .param .b16 scale_h)\n{",
        ),
    ] {
        // The first thing refused in the module's order: a device function's body the call
        // left in place still runs, or the call.
        let e = fence_ptx(&module).unwrap_err();
        assert!(matches!(e.reason, FenceRefusal::Call | FenceRefusal::DeviceFunction), "{e}");
    }
}

/// A device function that takes a `float4` and returns a structure of two floats, by value, as
/// nvcc passes them: `.param` byte arrays, vector stores and loads at offsets.
const AGGREGATE: &str = ".version 7.8\n.target sm_52\n.address_size 64\n\
    .func (.param .align 8 .b8 pair_ret[8]) pair(.param .align 16 .b8 pair_v[16])\n{\n\t.reg .f32 %f<7>;\n\
    \tld.param.v4.f32 {%f1, %f2, %f3, %f4}, [pair_v];\n\tadd.f32 %f5, %f1, %f2;\n\tadd.f32 %f6, %f3, %f4;\n\
    \tst.param.f32 [pair_ret+0], %f5;\n\tst.param.f32 [pair_ret+4], %f6;\n\tret;\n}\n\
    .visible .entry k(.param .u64 k_p)\n{\n\t.reg .f32 %f<7>;\n\t.reg .b64 %rd<2>;\n\
    \tld.param.u64 %rd1, [k_p];\n\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];\n\
    \t{\n\t.param .align 16 .b8 param0[16];\n\tst.param.v4.f32 [param0+0], {%f1, %f2, %f3, %f4};\n\
    \t.param .align 8 .b8 retval0[8];\n\tcall.uni (retval0), pair, (param0);\n\
    \tld.param.f32 %f5, [retval0+0];\n\tld.param.f32 %f6, [retval0+OFFSET];\n\t}\n\
    \tst.global.v2.f32 [%rd1], {%f5, %f6};\n\tret;\n}\n";

#[test]
fn arguments_and_results_of_any_shape_pass_through_local_copies() {
    let module = fence_ptx(&AGGREGATE.replace("OFFSET", "4")).unwrap();
    assert_eq!((module.inlined(), module.dropped()), (1, 1), "{}", module.ptx());
    let text = lines(&module);
    for line in [
        ".local .align 16 .b8 _kinl0g_p0[16];",
        ".local .align 16 .b8 _kinl0g_r0[8];",
        "st.local.v4.f32 [_kinl0g_p0], {%f1, %f2, %f3, %f4};",
        "ld.local.v4.f32 {%_kinl0r_f1, %_kinl0r_f2, %_kinl0r_f3, %_kinl0r_f4}, [_kinl0g_p0];",
        "st.local.f32 [_kinl0g_r0+4], %_kinl0r_f6;",
        "ld.local.f32 %f6, [_kinl0g_r0+4];",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    // Past the return value's 8 bytes: not a call sequence this inlines, so the call is refused.
    let e = fence_ptx(&AGGREGATE.replace("OFFSET", "8")).unwrap_err();
    assert!(matches!(e.reason, FenceRefusal::Call | FenceRefusal::DeviceFunction), "{e}");
}

/// The aligned form: each global access masked (`and` with the fence's limit for its width,
/// a multiple of the width) and joined with `or`; the checker proves it, and finds each mistake
/// of the same kind.
#[test]
fn the_aligned_form_masks_each_global_access_and_the_checker_proves_it() {
    let module =
        fenced("\tst.global.u32 [%rd1], %r1;\n\tld.global.u8 %r2, [%rd1+7];\n\tld.shared.u32 %r3, [%r3];\n");
    let text = module.aligned_ptx().to_owned();
    let lines: Vec<String> = text.lines().map(|l| l.trim().replace('\t', " ")).collect();
    for line in [
        "sub.u64 %__kargs_t, %__kargs_gl, 4;",
        "cvt.u32.u64 %__kargs_g4, %__kargs_t;",
        "and.b32 %__kargs_k, %__kargs_u, %__kargs_g4;",
        "or.b64 %__kargs_a0, %__kargs_c, %__kargs_gb;",
        "and.b32 %__kargs_k, %__kargs_u, %__kargs_g1;",
    ] {
        assert!(lines.iter().any(|l| l == line), "{line} in {lines:#?}");
    }
    // The limit is the mask: nothing rounds it (the fence's length is a multiple of 16).
    assert!(!lines.iter().any(|l| l.starts_with("and.b32 %__kargs_g")), "{lines:#?}");
    // The shared access is clamped as in the other form, and only global accesses differ.
    assert_eq!(lines.iter().filter(|l| l.starts_with("min.u32")).count(), 1, "{lines:#?}");
    assert_eq!(check(&text).map(|r| r.clamped), Ok(module.accesses()));
    for (what, edit) in [
        (
            "a limit for 3 bytes, not a multiple of the width",
            text.replacen("sub.u64\t%__kargs_t, %__kargs_gl, 4;", "sub.u64\t%__kargs_t, %__kargs_gl, 3;", 1),
        ),
        (
            "a mask from the length, not a limit",
            text.replacen(
                "cvt.u32.u64\t%__kargs_g4, %__kargs_t;",
                "cvt.u32.u64\t%__kargs_g4, %__kargs_gl;",
                1,
            ),
        ),
        (
            "a narrower access's mask",
            text.replacen(
                "and.b32\t%__kargs_k, %__kargs_u, %__kargs_g4;",
                "and.b32\t%__kargs_k, %__kargs_u, %__kargs_g1;",
                1,
            ),
        ),
        (
            "the shared window's limit as the mask",
            text.replacen(
                "and.b32\t%__kargs_k, %__kargs_u, %__kargs_g4;",
                "and.b32\t%__kargs_k, %__kargs_u, %__kargs_s4;",
                1,
            ),
        ),
        (
            "joined to something that is not the fence's base",
            text.replacen(
                "or.b64\t%__kargs_a0, %__kargs_c, %__kargs_gb;",
                "or.b64\t%__kargs_a0, %__kargs_c, %rd1;",
                1,
            ),
        ),
        (
            "the mask left out",
            text.replacen(
                "\tand.b32\t%__kargs_k, %__kargs_u, %__kargs_g4;\n",
                "\tmov.u32\t%__kargs_k, %__kargs_u;\n",
                1,
            ),
        ),
    ] {
        assert_ne!(edit, text, "{what}: the edit applies");
        assert_eq!(check(&edit).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::Unproven), "{what}");
    }
}

/// nvcc's `printf` (`corpus/printf.ptx`: two calls, the second with a string literal, an
/// unsigned, a hexadecimal, a long, a char and a double): each `vprintf` call sequence becomes a
/// record written into the print buffer, one of the module's variables; the format strings and
/// the runtime's declaration go. A format the fence does not read leaves the call, refused by
/// name.
#[test]
fn a_printf_becomes_a_record_in_the_print_buffer() {
    let ptx = include_str!("../../kernels/corpus/printf.ptx");
    let module = fence_ptx(ptx).unwrap();
    let print = module.print_buffer().unwrap();
    // The string literal `%s` prints is a variable at 0; the print buffer follows at 16.
    assert_eq!(print.range(), 16..16 + 16 + 16 * 1024 + 512);
    assert_eq!(&module.variables()[..13], b"report_first\0");
    assert_eq!(module.variables().len(), print.range().end, "the format strings are not among them");
    let [first, second] = print.formats() else { panic!("{:?}", print.formats()) };
    assert_eq!((first.args(), first.args_len()), (2, 12));
    assert_eq!((second.args(), second.args_len()), (6, 40), "as nvcc packed them in the local depot");
    let text = lines(&module);
    for gone in ["vprintf", "$str;", "$str$1", "call", "st.param", "ld.param.b32", "isspacep"] {
        assert!(!text.iter().any(|l| l.contains(gone)), "{gone} in {text:#?}");
    }
    // The place reserved (past the buffer where the record does not fit), then the format's
    // number plus one and, 16 bytes in, the arguments from the registers the kernel stored them
    // from into its depot just before the call, through one clamp.
    let at = text
        .iter()
        .position(|l| l == "atom.global.add.u64 %_kpf0_p, [%__kargs_gb+16], 32;")
        .expect("the atomic");
    assert_eq!(
        text[at + 1..at + 6],
        [
            "setp.le.u64 %_kpf0_ok, %_kpf0_p, 16352;",
            "selp.b64 %_kpf0_s, %_kpf0_p, 16384, %_kpf0_ok;",
            "mov.u64 %_kpf0_b, 16;",
            "add.u64 %_kpf0_a, %_kpf0_s, %_kpf0_b;",
            "mov.u32 %_kpf0_w, 1;",
        ],
        "{text:#?}"
    );
    // The record's place is at most the buffer's end (16 + 16384), so its clamp is that bound
    // (a constant inside the module's variables), not the fence's length: the module asks for a
    // fence that long.
    assert!(text.iter().any(|l| l == "min.u32 %__kargs_k, %__kargs_u, 16416;"), "{text:#?}");
    assert_eq!(module.fence_min_len(), 16480);
    for text in [module.ptx(), module.aligned_ptx()] {
        let bound = "\tmin.u32\t%__kargs_k, %__kargs_u, 16416;\n";
        for (what, broken) in [
            ("the bound left out", text.replace(bound, "")),
            ("a bound past `MAX_REACH`", text.replace(bound, &bound.replace("16416", "65536"))),
            (
                "the bound's alignment left out",
                text.replacen("\tand.b32\t%__kargs_k, %__kargs_k, -8;\n", "", 1),
            ),
        ] {
            assert_ne!(broken, text, "{what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::Unproven), "{what}");
        }
    }
    let id = text.iter().position(|l| l == "st.global.u32 [%__kargs_r0], %_kpf0_w;").expect("the number");
    assert_eq!(
        text[id + 1..id + 3],
        ["st.global.f64 [%__kargs_r0+16], %fd1;", "st.global.u32 [%__kargs_r0+24], %r1;"],
        "{text:#?}"
    );
    // The second call's record: 16 bytes and the 40 of its arguments, rounded up to 48; each 8
    // bytes one store (two `int`s as a pair), so that the stores take one clamp.
    assert!(text.iter().any(|l| l == "atom.global.add.u64 %_kpf1_p, [%__kargs_gb+16], 64;"), "{text:#?}");
    let id = text.iter().position(|l| l == "st.global.u32 [%__kargs_r0], %_kpf1_w;").expect("the number");
    assert_eq!(
        text[id + 1..id + 6],
        [
            "st.global.u64 [%__kargs_r0+16], %rd11;",
            "st.global.v2.b32 [%__kargs_r0+24], {%r1, %r1};",
            "st.global.u64 [%__kargs_r0+32], %rd7;",
            "st.global.u32 [%__kargs_r0+40], %r14;",
            "st.global.f64 [%__kargs_r0+48], %fd2;",
        ],
        "{text:#?}"
    );
    // Nothing reads the depot now: its stores and the frame's addresses are gone with it.
    for gone in ["__local_depot0", "%SPL, 0;", "%SP, 0;"] {
        assert!(!text.iter().any(|l| l.contains(gone)), "{gone} in {text:#?}");
    }
    // Where the run of stores before the call is broken (a store elsewhere between), or a
    // register stored is written again before the call, the arguments are read from the depot
    // by name, 16 bytes at a time where they are aligned and inside it.
    for (what, edited) in [
        (
            "a store between",
            ptx.replacen(
                "	mov.u64 	%rd5, $str;
",
                "	st.global.u32 	[%rd2], %r1;
	mov.u64 	%rd5, $str;
",
                1,
            ),
        ),
        (
            "a stored register written again",
            ptx.replacen(
                "	mov.u64 	%rd5, $str;
",
                "	add.s32 	%r1, %r1, 1;
	mov.u64 	%rd5, $str;
",
                1,
            ),
        ),
    ] {
        assert_ne!(edited, ptx, "{what}: the edit applies");
        let text = lines(&fence_ptx(&edited).unwrap());
        for line in [
            ".local .align 16 .b8 __local_depot0[40];",
            "st.local.u32 [__local_depot0+8], %r1;",
            "ld.local.v4.u32 {%_kpf0_q0, %_kpf0_q1, %_kpf0_q2, %_kpf0_q3}, [__local_depot0];",
            "st.global.v4.u32 [%__kargs_r0+16], {%_kpf0_q0, %_kpf0_q1, %_kpf0_q2, %_kpf0_q3};",
        ] {
            assert!(text.iter().any(|l| l == line), "{what}: {line} in {text:#?}");
        }
        // The second call's run is whole: its record takes the registers.
        assert!(text.iter().any(|l| l == "st.global.f64 [%__kargs_r0+48], %fd2;"), "{what}: {text:#?}");
    }
    // Where the kernel reads printf's result, it is the number of arguments converted.
    let reads_result = ptx.replacen("} // callseq 1", "} // callseq 1\n\tst.global.u32 [%rd2], %r16;", 1);
    assert_ne!(reads_result, ptx);
    let text = lines(&fence_ptx(&reads_result).unwrap());
    assert!(text.iter().any(|l| l == "mov.b32 %r16, 6;"), "{text:#?}");
    // `%n` (a store through the argument) is not rewritten: the call stays.
    let with_string = ptx.replacen("37, 102, 32", "37, 110, 32", 1);
    assert_ne!(with_string, ptx);
    let e = fence_ptx(&with_string).unwrap_err();
    assert_eq!(e.reason, FenceRefusal::Call, "{e}");
    assert!(e.statement.contains("vprintf"), "{e}");
    // An argument buffer register written again, as one of a vector's registers, no longer
    // holds the local depot's address: the record reads the arguments through the register (a
    // generic load), as `vprintf` would, not from the depot by name.
    let overwritten = ptx.replacen(
        "\tadd.u64 \t%rd4, %SPL, 0;\n",
        "\tadd.u64 \t%rd4, %SPL, 0;\n\tld.global.v2.u64 {%rd3, %rd4}, [%rd1];\n",
        1,
    );
    assert_ne!(overwritten, ptx);
    let text = lines(&fence_ptx(&overwritten).unwrap());
    assert!(!text.iter().any(|l| l.starts_with("ld.local.u32 %_kpf")), "read by name");
    assert!(text.iter().any(|l| l == "ld.u32 %_kpf0_w, [%__kargs_a0];"), "read through the register");
}

/// A global fragment whose stride is a constant (a register the kernel writes once, with a `mov`
/// of a multiple of 16 bytes' worth) is clamped as one access of its whole reach at that stride, the
/// stride written as the constant: no runtime bound, so ptxas folds the stride into the lines'
/// offsets as it does unfenced. The module then needs a fence that long, which the checker
/// reports; it proves nothing less, in either form.
#[test]
fn a_fragment_of_a_constant_stride_is_clamped_as_one_access() {
    let body = "\tmov.u32 %r1, 16;\n\
        \twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%rd1], %r1;\n\
        \twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}, %r1;\n";
    let module = fenced(body);
    assert_eq!(module.accesses(), 2);
    // A's 16 lines of 32 bytes, 15 strides of 32 apart: 512 bytes; D's of 64, 64 apart: 1 KiB.
    assert_eq!(module.fence_min_len(), 1024);
    assert_eq!(module.base_align(), 32);
    let text = lines(&module);
    for line in [
        "sub.u64 %__kargs_t, %__kargs_gl, 512;",
        "min.u32 %__kargs_k, %__kargs_u, %__kargs_g512;",
        "and.b32 %__kargs_k, %__kargs_k, -32;",
        "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%__kargs_a0], 16;",
        "min.u32 %__kargs_k, %__kargs_u, %__kargs_g1024;",
        "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%__kargs_a0], {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}, 16;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    assert!(!text.iter().any(|l| l.contains("%__kargs_ws")), "no stride bounded: {text:#?}");
    // Not a constant, or not one the form covers: the stride bounded at run time.
    for (what, body) in [
        (
            "written twice",
            body.replacen("\tmov.u32 %r1, 16;\n", "\tmov.u32 %r1, 16;\n\tmov.u32 %r1, 16;\n", 1),
        ),
        ("computed", body.replacen("mov.u32 %r1, 16;", "mov.u32 %r1, %tid.x;", 1)),
        ("reaching past the most a clamp covers", body.replacen("mov.u32 %r1, 16;", "mov.u32 %r1, 4096;", 1)),
    ] {
        let module = fenced(&body);
        let text = lines(&module);
        let bounded = text.iter().filter(|l| l.contains("[%__kargs_a0], %__kargs_ws;")).count();
        assert_eq!(bounded, 1, "{what}: {text:#?}");
        assert_eq!(module.fence_min_len(), MIN_FENCE_LEN, "{what}");
    }
    // 12 elements: 24 bytes of `f16`, bounded at run time; 48 of `f32`, a constant D reaches
    // 64 + 12 * 60 bytes with.
    let twelve = fenced(&body.replacen("mov.u32 %r1, 16;", "mov.u32 %r1, 12;", 1));
    let text = lines(&twelve);
    assert!(text.iter().any(|l| l.ends_with("[%__kargs_a0], %__kargs_ws;")), "{text:#?}");
    assert!(text.iter().any(|l| l.ends_with(", 12;") && l.starts_with("wmma.store")), "{text:#?}");
    assert_eq!(twelve.fence_min_len(), 784);
    // A generic fragment keeps the bounded stride, which is chosen with its address where the
    // entry has shared memory the address may be in.
    let generic =
        "\tmov.u32 %r3, 16;\n\twmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%rd1], %r3;\n";
    let either = fenced(&format!("\t.shared .align 16 .b8 tile[512];\n{generic}"));
    let text = lines(&either);
    assert!(text.iter().any(|l| l == "isspacep.shared %__kargs_ps, %rd1;"), "{text:#?}");
    assert!(text.iter().any(|l| l.ends_with("[%__kargs_a0], %__kargs_wf;")), "{text:#?}");
    assert!(lines(&fenced(generic)).iter().any(|l| l.ends_with("[%__kargs_a0], %__kargs_ws;")));
    // A module without a fragment needs only the shortest fence.
    assert_eq!(fenced("\tld.global.u32 %r1, [%rd1];\n").fence_min_len(), MIN_FENCE_LEN);
    for (form, text) in [("clamped", module.ptx()), ("aligned", module.aligned_ptx())] {
        assert_eq!(check(text).map(|r| r.fence_min_len), Ok(1024), "{form}");
        for (what, broken) in [
            (
                "a longer stride than the clamp covers",
                text.replacen("[%__kargs_a0], 16;", "[%__kargs_a0], 32;", 1),
            ),
            ("a stride of 8 bytes' worth", text.replacen("[%__kargs_a0], 16;", "[%__kargs_a0], 4;", 1)),
            ("the stride a register", text.replacen("[%__kargs_a0], 16;", "[%__kargs_a0], %r1;", 1)),
            (
                "a limit for a shorter reach",
                text.replacen(
                    "sub.u64\t%__kargs_t, %__kargs_gl, 512;",
                    "sub.u64\t%__kargs_t, %__kargs_gl, 480;",
                    1,
                ),
            ),
            (
                "a limit past the most a clamp covers",
                text.replacen(
                    "sub.u64\t%__kargs_t, %__kargs_gl, 512;",
                    &format!("sub.u64\t%__kargs_t, %__kargs_gl, {};", 2 * MAX_REACH),
                    1,
                ),
            ),
            (
                "aligned to 16",
                text.replacen(
                    "and.b32\t%__kargs_k, %__kargs_k, -32;",
                    "and.b32\t%__kargs_k, %__kargs_k, -16;",
                    1,
                ),
            ),
        ] {
            assert_ne!(broken, text, "{form}, {what}: the edit applies");
            assert!(check(&broken).is_err(), "{form}, {what}");
        }
    }
}

/// `.local` loads and stores through nvcc's frame pointer name the frame where each register of
/// the chain has one unguarded definition; anything else stays clamped, and a named place
/// outside the frame is clamped too.
#[test]
fn local_accesses_through_the_frame_pointer_name_the_frame() {
    let frame = "\t.local .align 16 .b8 __local_depot0[32];\n\t.reg .b64 %SPL;\n\tmov.u64 %SPL, __local_depot0;\n\
                 \tadd.u64 %rd4, %SPL, 8;\n";
    let access = "\tst.local.u32 [%rd4+4], %r1;\n\tld.local.u32 %r2, [%rd4+8];\n";
    let module = fenced(&format!("{frame}{access}"));
    let text = lines(&module);
    for line in ["st.local.u32 [__local_depot0+12], %r1;", "ld.local.u32 %r2, [__local_depot0+16];"] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    assert_eq!(module.accesses(), 0, "{text:#?}");
    for (what, body) in [
        ("a second definition", format!("{frame}\tadd.u64 %rd4, %rd4, 4;\n{access}")),
        (
            "a write as part of a vector",
            format!("{frame}\tld.global.v2.u64 {{%rd4, %rd5}}, [%rd1];\n{access}"),
        ),
        ("a guarded definition", format!("{frame}{access}").replace("\tadd.u64 %rd4", "\t@%p1 add.u64 %rd4")),
        ("the frame pointer defined twice", format!("{frame}\tmov.u64 %SPL, __local_depot0;\n{access}")),
        (
            "a definition that is not a constant offset",
            format!("{frame}{access}").replace("%SPL, 8;", "%SPL, %rd1;"),
        ),
    ] {
        let module = fenced(&body);
        let text = lines(&module);
        assert!(!text.iter().any(|l| l.contains("[__local_depot0+")), "{what}: {text:#?}");
        assert!(module.accesses() >= 2, "{what}: {text:#?}");
    }
    // Past the frame's 32 bytes: named, and clamped as any place outside its variable is.
    let module = fenced(&format!("{frame}\tst.local.u32 [%rd4+28], %r1;\n"));
    assert_eq!(module.accesses(), 1, "{:#?}", lines(&module));
}

/// A `wmma` fragment is clamped whole: its stride bounded by the fence and aligned, its address
/// at most the last offset the whole fragment fits at, aligned to 32; where the kernel writes
/// no stride, the line's length is written, a constant (clamped as one access: see
/// `a_fragment_of_a_constant_stride_is_clamped_as_one_access`). The checker proves nothing
/// less, in either form.
#[test]
fn a_fragment_is_clamped_whole_and_the_checker_proves_nothing_less() {
    let body = "\tmov.u32 %r1, %tid.x;\n\
        \twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%rd1], %r1;\n\
        \twmma.load.b.sync.aligned.col.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%rd1];\n\
        \twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}, \
        {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, \
        {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1};\n\
        \twmma.store.d.sync.aligned.col.m32n8k16.global.f32 [%rd1], {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}, %r1;\n";
    let module = fenced(body);
    assert_eq!(module.accesses(), 3);
    let text = lines(&module);
    for line in [
        "and.b32 %__kargs_wa, %r1, -8;",
        "mul.wide.u32 %__kargs_wp, %__kargs_wa, 30;",
        "cvt.u64.u32 %__kargs_wt, %__kargs_g32;",
        "setp.gt.u64 %__kargs_wg, %__kargs_wp, %__kargs_wt;",
        "selp.b32 %__kargs_ws, 0, %__kargs_wa, %__kargs_wg;",
        "mul.lo.u32 %__kargs_wr, %__kargs_ws, 30;",
        "sub.u32 %__kargs_wl, %__kargs_g32, %__kargs_wr;",
        "min.u32 %__kargs_k, %__kargs_u, %__kargs_wl;",
        "and.b32 %__kargs_k, %__kargs_k, -32;",
        "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%__kargs_a0], %__kargs_ws;",
        // No stride written: the line's length, 16 elements, a constant: 32 + 16 * 30 bytes.
        "min.u32 %__kargs_k, %__kargs_u, %__kargs_g512;",
        "wmma.load.b.sync.aligned.col.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%__kargs_a0], 16;",
        // A column-major 32x8 f32: 8 lines of 32 elements (128 bytes), 7 * 4 bytes of span.
        "and.b32 %__kargs_wa, %r1, -4;",
        "mul.wide.u32 %__kargs_wp, %__kargs_wa, 28;",
        "cvt.u64.u32 %__kargs_wt, %__kargs_g128;",
        // A changed stride is noted, as a moved address is.
        "xor.b32 %__kargs_wr, %r1, %__kargs_ws;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    // A generic fragment is clamped into the fence where the entry has no shared memory it
    // could mean; where it has, into the shared window where `isspacep.shared` says the address
    // is there, the address and its stride chosen together.
    let generic = "\twmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%rd1], %r3;\n";
    assert_eq!(fenced(generic).accesses(), 1);
    let either = fenced(&format!("\t.shared .align 16 .b8 tile[512];\n{generic}"));
    assert_eq!(either.base_align(), 32);
    let text = lines(&either);
    for line in [
        ".shared .align 32 .b8 tile[512];",
        "isspacep.shared %__kargs_ps, %rd1;",
        "selp.b32 %__kargs_wz, 0, %__kargs_wa, %__kargs_wg;",
        "cvta.shared.u64 %__kargs_x, %__kargs_x;",
        "selp.b64 %__kargs_a0, %__kargs_x, %__kargs_a0, %__kargs_ps;",
        "selp.b32 %__kargs_wf, %__kargs_wz, %__kargs_ws, %__kargs_ps;",
        "wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%__kargs_a0], %__kargs_wf;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    for (form, text) in [("clamped", either.ptx()), ("aligned", either.aligned_ptx())] {
        assert!(check(text).is_ok(), "{form}");
        for (what, broken) in [
            (
                "the strides swapped",
                text.replacen(
                    "%__kargs_wf, %__kargs_wz, %__kargs_ws, %__kargs_ps;",
                    "%__kargs_wf, %__kargs_ws, %__kargs_wz, %__kargs_ps;",
                    1,
                ),
            ),
            (
                "the stride chosen by another predicate",
                text.replacen(
                    "%__kargs_wf, %__kargs_wz, %__kargs_ws, %__kargs_ps;",
                    "%__kargs_wf, %__kargs_wz, %__kargs_ws, %__kargs_wg;",
                    1,
                ),
            ),
            (
                "the addresses swapped",
                text.replacen(
                    "%__kargs_a0, %__kargs_x, %__kargs_a0, %__kargs_ps;",
                    "%__kargs_a0, %__kargs_a0, %__kargs_x, %__kargs_ps;",
                    1,
                ),
            ),
            (
                "the predicate written between the choice and the load",
                text.replacen("\twmma.load.a", "\tisspacep.shared\t%__kargs_ps, %rd1;\n\twmma.load.a", 1),
            ),
            (
                "the fence's stride for both",
                text.replacen("[%__kargs_a0], %__kargs_wf;", "[%__kargs_a0], %__kargs_ws;", 1),
            ),
        ] {
            assert_ne!(broken, text, "{form}, {what}: the edit applies");
            assert_eq!(
                check(&broken).map(|_| ()).map_err(|f| f.kind),
                Err(FindingKind::Unproven),
                "{form}, {what}"
            );
        }
    }
    for (form, text) in [("clamped", module.ptx()), ("aligned", module.aligned_ptx())] {
        assert!(check(text).is_ok(), "{form}");
        let edits: Vec<(&str, String, FindingKind)> = vec![
            (
                "the stride left unbounded",
                text.replacen(
                    "selp.b32\t%__kargs_ws, 0, %__kargs_wa, %__kargs_wg;",
                    "selp.b32\t%__kargs_ws, %__kargs_wa, %__kargs_wa, %__kargs_wg;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "the test the wrong way round",
                text.replacen("setp.gt.u64\t%__kargs_wg", "setp.lt.u64\t%__kargs_wg", 1),
                FindingKind::FenceRegister,
            ),
            (
                "the test of a product not the stride's",
                text.replacen(
                    "mul.wide.u32\t%__kargs_wp, %__kargs_wa, 30;",
                    "mul.wide.u32\t%__kargs_wp, %__kargs_wa, 2;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "the stride changed between the test and the choice",
                text.replacen(
                    "\tselp.b32\t%__kargs_ws",
                    "\tand.b32\t%__kargs_wa, %r1, -8;\n\tselp.b32\t%__kargs_ws",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a stride of 8 bytes' worth of f16",
                text.replacen("and.b32\t%__kargs_wa, %r1, -8;", "and.b32\t%__kargs_wa, %r1, -4;", 1),
                FindingKind::Unproven,
            ),
            (
                "the span of another geometry",
                text.replacen(
                    "mul.lo.u32\t%__kargs_wr, %__kargs_ws, 30;",
                    "mul.lo.u32\t%__kargs_wr, %__kargs_ws, 2;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "the limit of a shorter line",
                text.replacen(
                    "sub.u32\t%__kargs_wl, %__kargs_g32, %__kargs_wr;",
                    "sub.u32\t%__kargs_wl, %__kargs_g128, %__kargs_wr;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "an address aligned to 16",
                text.replacen(
                    "and.b32\t%__kargs_k, %__kargs_k, -32;",
                    "and.b32\t%__kargs_k, %__kargs_k, -16;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "the kernel's stride, not the bounded one",
                text.replacen("[%__kargs_a0], %__kargs_ws;", "[%__kargs_a0], %r1;", 1),
                FindingKind::Unproven,
            ),
            (
                "the stride chosen again after the clamp",
                text.replacen(
                    "\twmma.load.a",
                    "\tselp.b32\t%__kargs_ws, 0, %__kargs_wa, %__kargs_wg;\n\twmma.load.a",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a fragment of a longer line than its clamp",
                text.replacen(
                    "wmma.load.a.sync.aligned.row.m16n16k16",
                    "wmma.load.a.sync.aligned.col.m32n8k16",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "the fence's clamp for a fragment in shared memory",
                text.replacen("m16n16k16.global.f16", "m16n16k16.shared.f16", 1),
                FindingKind::Unproven,
            ),
        ];
        for (what, broken, kind) in edits {
            assert_ne!(broken, text, "{form}, {what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(kind), "{form}, {what}");
        }
    }
}

/// A fragment in shared memory is clamped whole into the shared window, whose variables are
/// aligned to 32 and which is at least a line long (padded where no variable is); the checker
/// proves it against the shared window's own base and alignment.
#[test]
fn a_shared_fragment_is_clamped_into_the_shared_window() {
    let load = "\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r0, %r0}, [%rd2], %r1;\n";
    let module = fenced(&format!(
        "\t.shared .align 4 .b8 tile[512];\n\tmov.u32 %r1, 16;\n\tmov.u64 %rd2, tile;\n{load}"
    ));
    assert_eq!(module.accesses(), 1);
    // Only a fragment that may reach the fence needs the fence's base aligned to 32.
    assert_eq!(module.base_align(), 16);
    let text = lines(&module);
    for line in [
        ".shared .align 32 .b8 tile[512];",
        "sub.u32 %__kargs_u, %__kargs_u, %__kargs_sb;",
        "cvt.u64.u32 %__kargs_wt, %__kargs_s32;",
        "sub.u32 %__kargs_wl, %__kargs_s32, %__kargs_wr;",
        "add.u32 %__kargs_j, %__kargs_k, %__kargs_sb;",
        "cvt.u64.u32 %__kargs_a0, %__kargs_j;",
    ] {
        assert!(text.iter().any(|l| l == line), "{line} in {text:#?}");
    }
    for (form, text) in [("clamped", module.ptx()), ("aligned", module.aligned_ptx())] {
        assert!(check(text).is_ok(), "{form}");
        let edits: Vec<(&str, String, FindingKind)> = vec![
            (
                "the fence's base for a shared fragment",
                text.replacen(
                    "add.u32\t%__kargs_j, %__kargs_k, %__kargs_sb;\n\tcvt.u64.u32\t%__kargs_a0, %__kargs_j;",
                    "cvt.u64.u32\t%__kargs_c, %__kargs_k;\n\tadd.u64\t%__kargs_a0, %__kargs_c, %__kargs_gb;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a shared fragment joined to the window's end",
                text.replacen(
                    "add.u32\t%__kargs_j, %__kargs_k, %__kargs_sb;",
                    "add.u32\t%__kargs_j, %__kargs_k, %__kargs_se;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a shared variable aligned to 16",
                text.replacen(".shared .align 32 .b8 tile[512];", ".shared .align 16 .b8 tile[512];", 1),
                FindingKind::Unproven,
            ),
            (
                "the fence's limit for the shared window",
                text.replacen(
                    "cvt.u64.u32\t%__kargs_wt, %__kargs_s32;",
                    "cvt.u64.u32\t%__kargs_wt, %__kargs_g32;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a global fragment through the shared clamp",
                text.replacen("m16n16k16.shared.f16", "m16n16k16.global.f16", 1),
                FindingKind::Unproven,
            ),
        ];
        for (what, broken, kind) in edits {
            assert_ne!(broken, text, "{form}, {what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(kind), "{form}, {what}");
        }
    }
    // A shared window shorter than a line is padded to one.
    let short = fenced(&format!(
        "\t.shared .align 4 .b8 tiny[8];\n\tmov.u32 %r1, 16;\n\tmov.u64 %rd2, tiny;\n{load}"
    ));
    let text = lines(&short);
    assert!(text.iter().any(|l| l == ".shared .align 32 .b8 __kargs_shared_pad[32];"), "{text:#?}");
    assert!(text.iter().any(|l| l == ".shared .align 32 .b8 tiny[8];"), "{text:#?}");
}

/// nvcc's `int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 2 * in[i];` with
/// `in` and `out` the entry's pointers `p` and `q` and `n` its bound, then `tail` (more of the
/// body, after the accesses).
fn proven_body(accesses: &str) -> String {
    format!(
        "\tld.param.u32 %r2, [n];\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n\
         \tmad.lo.s32 %r1, %r3, %r4, %r5;\n\tsetp.ge.s32 %p1, %r1, %r2;\n\t@%p1 bra $L__BB0_2;\n\
         \tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.s32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n{accesses}\
         $L__BB0_2:\n"
    )
}

/// Global accesses `[p + i * 4]` after the kernel's own `i < n`, with `i` the thread's signed
/// index in the grid, are proven: unclamped, each through the pointer's hidden address plus the
/// fence's own index times 4, after the fence's own check; the kernel's index is the fence's.
/// An unsigned compare (`unsigned n`) or product (`unsigned i`) is proven too, the proof saying
/// how the bound is compared. Where any other part of the pattern differs (a register written
/// twice, a label between the check and the access, an offset past the element), the access is
/// not proven by the check (a ranged proof confines it).
#[test]
fn a_bounds_check_of_the_kernels_proves_its_accesses() {
    let body =
        proven_body("\tld.global.f32 %f1, [%rd4];\n\tadd.f32 %f2, %f1, %f1;\n\tst.global.f32 [%rd4], %f2;\n");
    let module = fenced(&body);
    assert_eq!((module.accesses(), module.proven()), (0, 2));
    assert_eq!(
        module.proofs("k"),
        [Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed: true }, size: 4, align: 4 }]
    );
    assert_eq!(proofs_in(module.ptx(), "k"), module.proofs("k"));
    assert_eq!(proofs_in(module.aligned_ptx(), "k"), module.proofs("k"));
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    // The hidden parameter before the fence's four, read in the leading run.
    assert!(at(".param .u64 __kargs_addr_0_1_4,") < at(".param .u64 __kargs_fence_base,"));
    let index = at("mad.lo.s32 %__kargs_ix, %__kargs_ic, %__kargs_in, %__kargs_it;");
    assert!(index < at("ld.param.u32 %__kargs_im1, [n];"));
    at("ld.param.u64 %__kargs_ip0, [__kargs_addr_0_1_4];");
    // The fence's check, made once in the leading run.
    let check = at("setp.ge.s32 %__kargs_ig1s32, %__kargs_ix, %__kargs_im1;");
    // The kernel's index is a copy of the fence's; its check, then the fence's.
    assert!(check < at("mov.u32 %r1, %__kargs_ix;"));
    let guard = at("@%__kargs_ig1s32 ret;");
    // (The kernel's branch to a `ret` before anything is noted is a `ret` itself.)
    assert_eq!(text[guard - 1], "@%p1 ret;");
    assert_eq!(text[guard + 1], "mul.wide.s32 %__kargs_io4, %__kargs_ix, 4;");
    assert_eq!(text.iter().filter(|l| **l == "add.s64 %__kargs_a0, %__kargs_ip0, %__kargs_io4;").count(), 2);
    at("ld.global.f32 %f1, [%__kargs_a0];");
    at("st.global.f32 [%__kargs_a0], %f2;");

    // Not the pattern: no indexed proof, and the fence confines the kernel's own index instead
    // (a ranged proof's, `ranged_proofs_confine_the_kernels_index`).
    // Compared unsigned (`unsigned n`), the proof says so; extended unsigned (`unsigned i`), the
    // same product (the index is below 2^31).
    let indexed =
        |signed| Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed }, size: 4, align: 4 };
    for (what, text, signed) in [
        ("an unsigned compare", body.replace("setp.ge.s32", "setp.ge.u32"), false),
        ("an unsigned product", body.replace("mul.wide.s32", "mul.wide.u32"), true),
        ("both", body.replace("setp.ge.s32", "setp.ge.u32").replace("mul.wide.s32", "mul.wide.u32"), false),
    ] {
        assert_ne!(text, body, "{what}: the edit applies");
        let module = fenced(&text);
        assert_eq!((module.accesses(), module.proven()), (0, 2), "{what}");
        assert_eq!(module.proofs("k"), [indexed(signed)], "{what}");
        assert_eq!(proofs_in(module.aligned_ptx(), "k"), module.proofs("k"), "{what}");
    }
    let unproven = [
        (
            "the index written twice",
            body.replace("\tcvta.to.global", "\tadd.s32 %r1, %r1, 1;\n\tcvta.to.global"),
        ),
        ("another index", body.replace("mad.lo.s32 %r1, %r3, %r4, %r5", "mad.lo.s32 %r1, %r3, %r3, %r5")),
        ("a label between", body.replace("\tcvta.to.global", "$L__BB0_1:\n\tcvta.to.global")),
        ("the check the other way", body.replace("@%p1 bra", "@!%p1 bra")),
        ("a bound that is not a parameter", body.replace("ld.param.u32 %r2, [n];", "mov.u32 %r2, 1000;")),
    ];
    for (what, text) in unproven {
        let module = fenced(&text);
        assert_eq!((module.accesses(), module.proven()), (0, 2), "{what}");
        let kinds: Vec<ProofKind> = module.proofs("k").iter().map(|p| p.kind).collect();
        assert!(matches!(kinds.as_slice(), [ProofKind::Ranged { .. }]), "{what}: {kinds:?}");
    }
    // An access past the element's bytes is not the indexed proof's: a ranged one's, reaching 8.
    let past = fenced(&proven_body(
        "\tld.global.f32 %f1, [%rd4+4];\n\tld.global.u16 %h1, [%rd4+2];\n\tld.global.u8 %h1, [%rd4+3];\n",
    ));
    assert_eq!((past.accesses(), past.proven()), (0, 3));
    let ranged = Proof { pointer: 0, kind: ProofKind::Ranged { signed: true, reach: 8 }, size: 4, align: 4 };
    assert!(past.proofs("k").contains(&ranged), "{:?}", past.proofs("k"));
    // `setp.lt` with the check negated is the same check.
    let lt = fenced(&body.replace("setp.ge.s32", "setp.lt.s32").replace("@%p1 bra", "@!%p1 bra"));
    assert_eq!((lt.accesses(), lt.proven()), (0, 2));
}

/// A proof's condition: an indexed one's `n` elements of `size` bytes from the pointer's offset
/// inside the fence, the offset a multiple of `size`, nothing where `n <= 0`; a fixed one's
/// reach from the offset inside the fence, the offset a multiple of its alignment, or else the
/// fence's base; and the grid's threads in x.
#[test]
fn a_proofs_condition_is_checked_at_each_launch() {
    let indexed =
        Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed: true }, size: 4, align: 4 };
    let fixed = Proof { pointer: 2, kind: ProofKind::Fixed, size: 12, align: 4 };
    assert_eq!(indexed.param_name(), "__kargs_addr_0_1_4");
    assert_eq!(fixed.param_name(), "__kargs_addr_2_r12_a4");
    for proof in [indexed, fixed] {
        assert_eq!(Proof::from_param_name(&proof.param_name()), Some(proof));
    }
    for name in [
        "__kargs_addr_0_1_3",
        "__kargs_addr_0_1",
        "__kargs_addr_0_1_4_5",
        "__kargs_addr_00_1_4",
        "__kargs_addr_0_r0_a4",
        "__kargs_addr_0_r12_a3",
        "__kargs_addr_0_r12",
        "x",
    ] {
        assert_eq!(Proof::from_param_name(name), None, "{name}");
    }
    let base = 0x7000_0000;
    // Parameters: 0 and 2 pointers (offsets), 1 the count.
    let params = |offset: u64, count: i32, other: u64| {
        move |i: usize| match i {
            0 => offset.to_ne_bytes(),
            1 => {
                let mut w = [0u8; 8];
                w[..4].copy_from_slice(&count.to_ne_bytes());
                w
            }
            _ => other.to_ne_bytes(),
        }
    };
    assert_eq!(indexed.hidden_values(base, 4096, params(256, 960, 0)).map(|v| v.address), Ok(base + 256));
    let past = indexed.hidden_values(base, 4096, params(256, 961, 0)).unwrap_err();
    assert_eq!((past.offset, past.count, past.fence_len), (256, 961, 4096));
    assert!(indexed.hidden_values(base, 4096, params(258, 1, 0)).map(|v| v.address).is_err(), "misaligned");
    assert_eq!(
        indexed.hidden_values(base, 4096, params(u64::MAX, 0, 0)).map(|v| v.address),
        Ok(base),
        "no thread passes"
    );
    assert_eq!(indexed.hidden_values(base, 4096, params(u64::MAX, -5, 0)).map(|v| v.address), Ok(base));
    assert!(
        indexed.hidden_values(base, 4096, params(u64::MAX - 3, 1, 0)).map(|v| v.address).is_err(),
        "no wrap"
    );
    assert_eq!(fixed.hidden_values(base, 4096, params(0, 0, 4084)).map(|v| v.address), Ok(base + 4084));
    // A fixed proof's accesses the launch does not cover go to the fence's base, inside.
    assert_eq!(
        fixed.hidden_values(base, 4096, params(0, 0, 4088)).map(|v| v.address),
        Ok(base),
        "12 bytes past the end"
    );
    assert_eq!(fixed.hidden_values(base, 4096, params(0, 0, 2)).map(|v| v.address), Ok(base), "misaligned");
    assert_eq!(
        fixed.hidden_values(base, 4096, params(0, 0, u64::MAX)).map(|v| v.address),
        Ok(base),
        "no wrap"
    );
    assert!(proof_grid_fits(1 << 21, 1024));
    assert!(!proof_grid_fits((1 << 21) + 1, 1024));
}

/// Accesses at constant offsets from a pointer (`*flag = 1`, `atomicAdd(count, c)`, `out[1]`)
/// are proven by a fixed proof: the pointer's address plus the constant, the accesses' reach
/// and widest access in the hidden parameter's name; no index, no check.
#[test]
fn accesses_at_constant_offsets_from_a_pointer_are_proven() {
    let module = fenced(
        "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n\tst.global.u32 [%rd2+8], %r1;\n\
         \tatom.global.add.u32 %r2, [%rd2+4], 1;\n$L__BB0_1:\n\tred.global.add.u64 [%rd2+16], 1;\n",
    );
    assert_eq!((module.accesses(), module.proven()), (0, 4));
    // One per access's end and width: a launch that does not fit one moves that access alone.
    let fixed = |size, align| Proof { pointer: 0, kind: ProofKind::Fixed, size, align };
    assert_eq!(module.proofs("k"), [fixed(4, 4), fixed(8, 4), fixed(12, 4), fixed(24, 8)]);
    let text = lines(&module);
    assert!(text.contains(&".param .u64 __kargs_addr_0_r24_a8,".to_owned()), "{text:#?}");
    assert!(text.contains(&"ld.param.u64 %__kargs_ip3, [__kargs_addr_0_r24_a8];".to_owned()));
    assert!(text.contains(&"ld.global.u32 %r1, [%__kargs_ip0];".to_owned()));
    assert!(text.contains(&"st.global.u32 [%__kargs_ip2+8], %r1;".to_owned()));
    assert!(text.contains(&"red.global.add.u64 [%__kargs_ip3+16], 1;".to_owned()), "after a label too");
    assert!(!text.iter().any(|l| l.contains("%__kargs_ix")), "no index");
    // A one-element buffer at the fence's end: `p[0]` runs where it is, `p[1]` (which a kernel
    // reads only where its count says so) is confined to the fence's base.
    let at_end = |i: usize| if i == 0 { 4092u64.to_ne_bytes() } else { [0; 8] };
    assert_eq!(fixed(4, 4).hidden_values(1 << 20, 4096, at_end).map(|v| v.address), Ok((1 << 20) + 4092));
    assert_eq!(fixed(8, 4).hidden_values(1 << 20, 4096, at_end).map(|v| v.address), Ok(1 << 20));
    // A misaligned constant, or one through a register written twice, is clamped.
    let clamped = fenced("\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2+2];\n");
    assert_eq!((clamped.accesses(), clamped.proven()), (1, 0));
    let twice =
        fenced("\tcvta.to.global.u64 %rd2, %rd1;\n\tadd.s64 %rd2, %rd2, 4;\n\tld.global.u32 %r1, [%rd2];\n");
    assert_eq!((twice.accesses(), twice.proven()), (1, 0));
    // The checker: a fixed proof's reach is its hidden parameter's word.
    let broken = module.ptx().replace("[%__kargs_ip3+16]", "[%__kargs_ip3+24]");
    assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::Unproven));
    let wider = module.ptx().replace("__kargs_addr_0_r24_a8", "__kargs_addr_0_r24_a4");
    assert_eq!(
        check(&wider).map(|_| ()).map_err(|f| f.kind),
        Err(FindingKind::Unproven),
        "an 8-byte access aligned to 4"
    );
}

/// Rewritten modules with a proof broken on purpose: each a finding.
#[test]
fn the_checker_finds_a_proof_a_rewriter_could_get_wrong() {
    let body = proven_body("\tld.global.f32 %f1, [%rd4];\n\tst.global.f32 [%rd4], %f1;\n");
    let module = fenced(&body);
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        let report = check(&text).unwrap();
        assert_eq!((report.clamped, report.proven), (0, 2));
        let edits: Vec<(&str, String, FindingKind)> = vec![
            (
                "the fence's own check left out",
                text.replace("\t@%__kargs_ig1s32 ret;\n", ""),
                FindingKind::Unproven,
            ),
            (
                "the check guarded the other way",
                text.replace("@%__kargs_ig1s32 ret;", "@!%__kargs_ig1s32 ret;"),
                FindingKind::Unproven,
            ),
            (
                "the check against another bound",
                text.replace("ld.param.u32\t%__kargs_im1, [n];", "mov.u32\t%__kargs_im1, 1000000;"),
                FindingKind::Unproven,
            ),
            (
                "an unsigned check of a signed proof",
                text.replace("setp.ge.s32\t%__kargs_ig1s32", "setp.ge.u32\t%__kargs_ig1s32"),
                FindingKind::Unproven,
            ),
            (
                "the product of the kernel's index",
                text.replace(
                    "mul.wide.s32\t%__kargs_io4, %__kargs_ix, 4;",
                    "mul.wide.s32\t%__kargs_io4, %r1, 4;",
                ),
                FindingKind::Unproven,
            ),
            (
                "a product of another size",
                text.replace(
                    "mul.wide.s32\t%__kargs_io4, %__kargs_ix, 4;",
                    "mul.wide.s32\t%__kargs_io4, %__kargs_ix, 8;",
                ),
                FindingKind::Unproven,
            ),
            (
                "the kernel's address plus the pointer's",
                text.replacen(
                    "add.s64\t%__kargs_a0, %__kargs_ip0, %__kargs_io4;",
                    "add.s64\t%__kargs_a0, %__kargs_ip0, %rd3;",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "an access past the element",
                text.replacen(
                    "ld.global.f32\t%f1, [%__kargs_a0];",
                    "ld.global.f32\t%f1, [%__kargs_a0+4];",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "a label between the check and the access",
                text.replacen(
                    "\tadd.s64\t%__kargs_a0, %__kargs_ip0",
                    "$L__kx:\n\tadd.s64\t%__kargs_a0, %__kargs_ip0",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "an index of other parts",
                text.replace(
                    "mad.lo.s32\t%__kargs_ix, %__kargs_ic, %__kargs_in, %__kargs_it;",
                    "mad.lo.s32\t%__kargs_ix, %__kargs_ic, %__kargs_ic, %__kargs_it;",
                ),
                // The kernel's copy of it is then a fence register read as a value.
                FindingKind::FenceRegister,
            ),
            (
                "the pointer's address copied to the kernel",
                text.replace(
                    "mov.u32\t%r1, %__kargs_ix;",
                    "mov.b64\t%rd5, %__kargs_ip0;\n\tmov.u32\t%r1, %__kargs_ix;",
                ),
                FindingKind::FenceRegister,
            ),
            (
                "the index written again",
                text.replace(
                    "\t@%__kargs_ig1s32 ret;\n",
                    "\t@%__kargs_ig1s32 ret;\n\tmov.u32\t%__kargs_ix, 0;\n",
                ),
                FindingKind::FenceRegister,
            ),
            (
                "the check written again after the leading run",
                text.replace(
                    "\t@%__kargs_ig1s32 ret;\n",
                    "\tsetp.ge.s32\t%__kargs_ig1s32, %__kargs_ix, %__kargs_ix;\n\t@%__kargs_ig1s32 ret;\n",
                ),
                FindingKind::FenceRegister,
            ),
            (
                "a proof of a bound that is not 4 bytes",
                text.replace("__kargs_addr_0_1_4", "__kargs_addr_0_0_4"),
                FindingKind::HiddenParams,
            ),
        ];
        for (what, broken, kind) in edits {
            assert_ne!(broken, text, "{what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(kind), "{what}");
        }
    }
}

/// Rewritten modules with an unsigned indexed proof (`unsigned i`, `unsigned n`) broken on
/// purpose: the check and the proof must agree on how the bound is compared (the launcher reads
/// the bound as the proof's name says), each disagreement a finding.
#[test]
fn the_checker_finds_an_unsigned_proof_a_rewriter_could_get_wrong() {
    let body = proven_body("\tld.global.f32 %f1, [%rd4];\n\tst.global.f32 [%rd4], %f1;\n")
        .replace("setp.ge.s32", "setp.ge.u32")
        .replace("mul.wide.s32", "mul.wide.u32");
    let module = fenced(&body);
    let proof = Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed: false }, size: 4, align: 4 };
    assert_eq!(module.proofs("k"), [proof]);
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        let report = check(&text).unwrap();
        assert_eq!((report.clamped, report.proven), (0, 2));
        let check_line = "setp.ge.u32\t%__kargs_ig1u32, %__kargs_ix, %__kargs_im1;";
        assert!(text.contains(check_line), "{text}");
        for (what, broken) in [
            (
                "the check made signed",
                text.replace(check_line, &check_line.replace("setp.ge.u32", "setp.ge.s32")),
            ),
            ("the proof named signed", text.replace("__kargs_addr_0_u32_1_4", "__kargs_addr_0_1_4")),
            ("the fence's own check left out", text.replace("\t@%__kargs_ig1u32 ret;\n", "")),
        ] {
            assert_ne!(broken, text, "{what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::Unproven), "{what}");
        }
    }
    // The launcher reads the bound unsigned: a count past `i32::MAX` is one.
    let values = |count: u32| {
        proof.hidden_values(1 << 20, 4096, |i| if i == 1 { u64::from(count).to_ne_bytes() } else { [0; 8] })
    };
    assert_eq!(values(1024).map(|v| v.address), Ok(1 << 20));
    assert_eq!(values(1025).unwrap_err().count, 1025);
    assert_eq!(values(u32::MAX).unwrap_err().count, u64::from(u32::MAX), "not read as -1");
    assert_eq!(values(0).map(|v| v.address), Ok(1 << 20), "no thread passes");
}

/// A fixed proof reaching past the shortest fence is not made (the fence's base, where a launch
/// does not meet it, must hold its reach), and the checker refuses one whose name says so.
#[test]
fn a_fixed_proof_reaches_no_further_than_the_shortest_fence() {
    let far = fenced(
        "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2+252];\n\tld.global.u32 %r2, [%rd2+256];\n",
    );
    assert_eq!(
        (far.accesses(), far.proven()),
        (1, 1),
        "the access ending at 256 is proven, the one past it clamped"
    );
    let near = fenced("\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2+252];\n");
    assert_eq!(near.proofs("k"), [Proof { pointer: 0, kind: ProofKind::Fixed, size: 256, align: 4 }]);
    let broken = near.ptx().replace("__kargs_addr_0_r256_a4", "__kargs_addr_0_r260_a4");
    assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(FindingKind::HiddenParams));
}

/// A body whose accesses go through `p + x * 4`, `x` a 32-bit value the kernel loaded.
fn ranged_body(accesses: &str) -> String {
    format!(
        "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n\tmul.wide.s32 %rd3, %r1, 4;\n\
         \tadd.s64 %rd4, %rd2, %rd3;\n{accesses}"
    )
}

/// Accesses at `[p + x * S + c]` for any 32-bit index `x` are proven by a ranged proof: the
/// fence confines the kernel's own index to `[0, hi]` (an unsigned `min`, `hi` the launcher's),
/// scales it as the kernel does and adds the pointer's hidden address; in the clamped form a
/// moved index is noted. A label between the sum and an access is no matter where the index
/// and the sum are each written once and the index before the body's first label (it holds one
/// value for the whole thread). Where the index is written between, a label stands between
/// otherwise, a nested block declares the index's name again, or any access through the sum is
/// one no ranged proof covers, the accesses are clamped as a group.
#[test]
fn ranged_proofs_confine_the_kernels_index() {
    let body = ranged_body("\tld.global.f32 %f1, [%rd4];\n\tst.global.f32 [%rd4+4], %f1;\n");
    let module = fenced(&body);
    assert_eq!((module.accesses(), module.proven()), (0, 3));
    let ranged = Proof { pointer: 0, kind: ProofKind::Ranged { signed: true, reach: 8 }, size: 4, align: 4 };
    let fixed = Proof { pointer: 0, kind: ProofKind::Fixed, size: 4, align: 4 };
    assert_eq!(module.proofs("k"), [fixed, ranged]);
    assert_eq!(proofs_in(module.aligned_ptx(), "k"), module.proofs("k"));
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    let address = at(".param .u64 __kargs_addr_0_s4_r8,");
    assert_eq!(text[address + 1], ".param .u64 __kargs_range_0_s4_r8,");
    at("ld.param.u32 %__kargs_yh1, [__kargs_range_0_s4_r8];");
    let clamp = at("min.u32 %__kargs_yx0, %r1, %__kargs_yh1;");
    assert_eq!(text[clamp + 1], "xor.b32 %__kargs_d, %r1, %__kargs_yx0;", "noted where moved");
    assert_eq!(text[clamp + 2], "or.b32 %__kargs_v, %__kargs_v, %__kargs_d;");
    assert_eq!(text[clamp + 3], "mul.wide.s32 %__kargs_yo0, %__kargs_yx0, 4;");
    assert_eq!(text[clamp + 4], "add.s64 %__kargs_a0, %__kargs_ip1, %__kargs_yo0;");
    assert_eq!(text[clamp + 5], "ld.global.f32 %f1, [%__kargs_a0];");
    assert!(text.contains(&"st.global.f32 [%__kargs_a0+4], %f1;".to_owned()));
    assert!(!module.aligned_ptx().contains("xor.b32\t%__kargs_d, %r1"), "the aligned form notes nothing");
    // An unsigned index: its own proof, scaled unsigned.
    let unsigned = fenced(&body.replace("mul.wide.s32", "mul.wide.u32"));
    assert_eq!((unsigned.accesses(), unsigned.proven()), (0, 3));
    assert_eq!(unsigned.proofs("k")[1].kind, ProofKind::Ranged { signed: false, reach: 8 });
    let text = lines(&unsigned);
    assert!(text.contains(&"min.u32 %__kargs_yx0, %r1, %__kargs_yh1;".to_owned()), "{text:#?}");
    assert!(text.contains(&"mul.wide.u32 %__kargs_yo0, %__kargs_yx0, 4;".to_owned()));
    // Not covered: the sum's two accesses are clamped together, and no ranged proof is made.
    for (what, text) in [
        (
            "the index written between",
            body.replace("\tld.global.f32 %f1", "\tadd.s32 %r1, %r1, 1;\n\tld.global.f32 %f1"),
        ),
        (
            "a label between, the index written after the body's first",
            format!("$L_y:\n{}", body.replace("\tld.global.f32 %f1", "$L_x:\n\tld.global.f32 %f1")),
        ),
        (
            "a label between, the index written twice",
            body.replace("\tld.global.f32 %f1", "$L_x:\n\tld.global.f32 %f1")
                .replace("\tmul.wide.s32", "\tmov.u32 %r1, 0;\n\tmul.wide.s32"),
        ),
        ("a negative offset through the sum", body.replace("[%rd4+4]", "[%rd4+-4]")),
        ("a reach past the shortest fence", body.replace("[%rd4+4]", "[%rd4+256]")),
        ("a generic access through the sum", body.replace("ld.global.f32 %f1", "ld.f32 %f1")),
        (
            "the index's name declared again",
            body.replace(
                "\tld.global.f32 %f1, [%rd4];\n",
                "\t{\n\t.reg .b32 %r1;\n\tld.global.f32 %f1, [%rd4];\n\t}\n",
            ),
        ),
    ] {
        let module = fenced(&text);
        assert_eq!((module.accesses(), module.proven()), (2, 1), "{what}");
        assert_eq!(module.proofs("k"), [fixed], "{what}");
    }
    // A label between, the index loaded once at the start and the sum made once: still ranged.
    let looped = fenced(&body.replace("\tld.global.f32 %f1", "$L_x:\n\tld.global.f32 %f1"));
    assert_eq!((looped.accesses(), looped.proven()), (0, 3));
    assert_eq!(looped.proofs("k"), [fixed, ranged]);
}

/// A ranged proof's values at a launch: the pointer's address and `hi`, the last element from
/// it with the reach inside the fence (at most `i32::MAX` for a signed index); the fence's base
/// and 0 where the offset is misaligned or the reach does not fit. Never refused.
#[test]
fn a_ranged_proofs_range_is_the_pointers_room_in_the_fence() {
    let signed = Proof { pointer: 0, kind: ProofKind::Ranged { signed: true, reach: 8 }, size: 4, align: 4 };
    let unsigned = Proof { kind: ProofKind::Ranged { signed: false, reach: 8 }, ..signed };
    assert_eq!(signed.param_name(), "__kargs_addr_0_s4_r8");
    assert_eq!(signed.range_name().as_deref(), Some("__kargs_range_0_s4_r8"));
    assert_eq!(unsigned.param_names().collect::<Vec<_>>(), ["__kargs_addr_0_u4_r8", "__kargs_range_0_u4_r8"]);
    for proof in [signed, unsigned] {
        assert_eq!(Proof::from_param_name(&proof.param_name()), Some(proof));
    }
    for name in
        ["__kargs_addr_0_s4_r2", "__kargs_addr_0_x4_r8", "__kargs_addr_0_s3_r8", "__kargs_range_0_s4_r8"]
    {
        assert_eq!(Proof::from_param_name(name), None, "{name}");
    }
    let base = 0x7000_0000u64;
    let at = |offset: u64| move |_: usize| offset.to_ne_bytes();
    let values = |proof: Proof, len: u64, offset: u64| {
        let v = proof.hidden_values(base, len, at(offset)).unwrap();
        (v.address, v.range.unwrap())
    };
    // (4096 - 8 - 8) / 4 = 1020 elements from offset 8.
    assert_eq!(values(signed, 4096, 8), (base + 8, 1020));
    assert_eq!(values(unsigned, 4096, 8), (base + 8, 1020));
    assert_eq!(values(signed, 4096, 4088), (base + 4088, 0), "the reach at the fence's end");
    assert_eq!(values(signed, 4096, 4092), (base, 0), "the reach past it");
    assert_eq!(values(signed, 4096, 6), (base, 0), "misaligned");
    assert_eq!(values(signed, 4096, u64::MAX - 3), (base, 0), "no wrap");
    // A 4 GiB fence: `hi` is what the index holds, non-negative where it is signed.
    let bytes = Proof { kind: ProofKind::Ranged { signed: true, reach: 1 }, size: 1, align: 1, ..signed };
    assert_eq!(values(bytes, 1 << 32, 0), (base, i32::MAX as u64));
    assert_eq!(values(bytes, 1 << 32, (1 << 32) - 1), (base + (1 << 32) - 1, 0));
    let bytes = Proof { kind: ProofKind::Ranged { signed: false, reach: 1 }, ..bytes };
    assert_eq!(values(bytes, 1 << 32, 0), (base, u64::from(u32::MAX)));
}

/// Rewritten modules with a ranged proof broken on purpose: each a finding.
#[test]
fn the_checker_finds_a_ranged_proof_a_rewriter_could_get_wrong() {
    let module = fenced(&ranged_body("\tld.global.f32 %f1, [%rd4];\n\tst.global.f32 [%rd4+4], %f1;\n"));
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        let report = check(&text).unwrap();
        assert_eq!((report.clamped, report.proven), (0, 3));
        let min = "min.u32\t%__kargs_yx0, %r1, %__kargs_yh1;";
        let max = min;
        let mul = "mul.wide.s32\t%__kargs_yo0, %__kargs_yx0, 4;";
        for (what, edited, kind) in [
            ("the bound left out", text.replace(min, ""), FindingKind::Unproven),
            // (Not one of the fence's forms: a fence register read by another instruction.)
            (
                "a signed bound",
                text.replace(min, &min.replace("min.u32", "min.s32")),
                FindingKind::FenceRegister,
            ),
            (
                "the bound the other way",
                text.replace(min, "min.u32\t%__kargs_yx0, %__kargs_yh1, %r1;"),
                FindingKind::Unproven,
            ),
            ("an unsigned product", text.replace(mul, &mul.replace(".s32", ".u32")), FindingKind::Unproven),
            (
                "a product of another size",
                text.replace(mul, &mul.replace(", 4;", ", 8;")),
                FindingKind::Unproven,
            ),
            (
                "the kernel's index scaled",
                text.replace(mul, &mul.replace("%__kargs_yx0, 4", "%r1, 4")),
                FindingKind::Unproven,
            ),
            (
                "the bound read from the range's high half",
                text.replace("[__kargs_range_0_s4_r8];", "[__kargs_range_0_s4_r8+4];"),
                FindingKind::Unproven,
            ),
            (
                "a label between the bound and the access",
                text.replacen(
                    "\tadd.s64\t%__kargs_a0, %__kargs_ip1",
                    "$L__kx:\n\tadd.s64\t%__kargs_a0, %__kargs_ip1",
                    1,
                ),
                FindingKind::Unproven,
            ),
            (
                "an access past the reach",
                text.replace("[%__kargs_a0+4], %f1;", "[%__kargs_a0+8], %f1;"),
                FindingKind::Unproven,
            ),
            (
                "a range the name does not state",
                text.replace("__kargs_range_0_s4_r8", "__kargs_range_0_s4_r4"),
                FindingKind::HiddenParams,
            ),
            (
                "a reach past the shortest fence",
                text.replace("_s4_r8", "_s4_r512"),
                FindingKind::HiddenParams,
            ),
            (
                "the range read into the kernel",
                text.replace(max, &format!("{max}\n\tld.param.u64\t%rd5, [__kargs_range_0_s4_r8];")),
                FindingKind::Unproven,
            ),
            (
                "the pointer's address read into the kernel",
                text.replace(max, &format!("{max}\n\tld.param.u64\t%rd5, [__kargs_addr_0_s4_r8];")),
                FindingKind::Unproven,
            ),
            (
                "the fence's base read into the kernel",
                text.replace(max, &format!("{max}\n\tld.param.u64\t%rd5, [__kargs_fence_base];")),
                FindingKind::Unproven,
            ),
        ] {
            let found = check(&edited).map(|_| ()).map_err(|f| f.kind);
            assert_eq!(found, Err(kind), "{what}");
        }
    }
}

/// A module of one entry `k(.param .u64 p, .param .u64 n)` whose body computes the 64-bit
/// index `(size_t)blockIdx.x * blockDim.x + threadIdx.x`, checks it against `n` with
/// `setp.ge.s64` and reaches `p[i]` (4 bytes) with `shl.b64`, as nvcc writes `long long` code.
fn wide_body(accesses: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 p,\n\t.param .u64 n\n)\n{{\n\t.reg .b64 %rd<10>;\n\t.reg .b32 %r<8>;\n\
         \t.reg .f32 %f<4>;\n\t.reg .pred %p<4>;\n\tld.param.u64 %rd2, [p];\n\tld.param.u64 %rd3, [n];\n\
         \tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmul.wide.u32 %rd4, %r1, %r2;\n\tmov.u32 %r3, %tid.x;\n\
         \tcvt.u64.u32 %rd5, %r3;\n\tadd.s64 %rd1, %rd4, %rd5;\n\tsetp.ge.s64 %p1, %rd1, %rd3;\n\t@%p1 bra $L__BB0_2;\n\
         \tcvta.to.global.u64 %rd6, %rd2;\n\tshl.b64 %rd7, %rd1, 2;\n\tadd.s64 %rd8, %rd6, %rd7;\n{accesses}\
         $L__BB0_2:\n\tret;\n}}\n"
    )
}

/// The 64-bit form of an indexed proof (`long long` or `size_t` indices and counts): the fence
/// computes the 64-bit index itself, checks it against the 8-byte bound as the kernel does
/// (signed or not) and forms the address from its own product; the launcher's condition reads
/// the bound as the kernel compares it. Near misses are not proven so.
#[test]
fn a_64_bit_bounds_check_of_the_kernels_proves_its_accesses() {
    let body = wide_body("\tld.global.f32 %f1, [%rd8];\n\tst.global.f32 [%rd8], %f1;\n");
    let module = fence_ptx(&body).unwrap();
    assert_eq!((module.accesses(), module.proven()), (0, 2));
    let proof =
        Proof { pointer: 0, kind: ProofKind::Indexed64 { bound: 1, signed: true }, size: 4, align: 4 };
    assert_eq!(module.proofs("k"), [proof]);
    assert_eq!(proof.param_name(), "__kargs_addr_0_s64_1_4");
    assert_eq!(Proof::from_param_name("__kargs_addr_0_s64_1_4"), Some(proof));
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    at("add.s64 %__kargs_iy, %__kargs_iw, %__kargs_iv;");
    at("ld.param.u64 %__kargs_il1, [n];");
    at("mov.b64 %rd1, %__kargs_iy;");
    let check = at("setp.ge.s64 %__kargs_ig1s64, %__kargs_iy, %__kargs_il1;");
    let guard = at("@%__kargs_ig1s64 ret;");
    assert!(check < at("mov.b64 %rd1, %__kargs_iy;"), "made in the leading run");
    assert_eq!(text[guard + 1], "shl.b64 %__kargs_iq4, %__kargs_iy, 2;");
    assert_eq!(text.iter().filter(|l| **l == "add.s64 %__kargs_a0, %__kargs_ip0, %__kargs_iq4;").count(), 2);
    // `size_t`: unsigned; bytes: the index itself, no shift in the kernel.
    let unsigned = fence_ptx(&body.replace("setp.ge.s64", "setp.ge.u64")).unwrap();
    assert_eq!(unsigned.proofs("k")[0].kind, ProofKind::Indexed64 { bound: 1, signed: false });
    let bytes = fence_ptx(&wide_body("\tadd.s64 %rd9, %rd6, %rd1;\n\tst.global.u8 [%rd9], %r1;\n")).unwrap();
    assert_eq!(bytes.proofs("k")[0].size, 1);
    assert_eq!(bytes.accesses(), 0);
    // Not the pattern: no 64-bit indexed proof.
    for (what, text) in [
        ("a 32-bit check", body.replace("setp.ge.s64 %p1, %rd1, %rd3", "setp.ge.s32 %p1, %r1, %r2")),
        ("another index", body.replace("mul.wide.u32 %rd4, %r1, %r2", "mul.wide.u32 %rd4, %r1, %r1")),
        ("a label between", body.replace("\tcvta.to.global", "$L__BB0_1:\n\tcvta.to.global")),
        (
            "the index written twice",
            body.replace("\tcvta.to.global", "\tadd.s64 %rd1, %rd1, 1;\n\tcvta.to.global"),
        ),
    ] {
        let module = fence_ptx(&text).unwrap();
        let kinds: Vec<ProofKind> = module.proofs("k").iter().map(|p| p.kind).collect();
        assert!(!kinds.iter().any(|k| matches!(k, ProofKind::Indexed64 { .. })), "{what}: {kinds:?}");
    }
    // The launcher's condition, the bound read as the kernel compares it.
    let base = 0x7000_0000u64;
    let params =
        |offset: u64, n: u64| move |i: usize| if i == 0 { offset.to_ne_bytes() } else { n.to_ne_bytes() };
    let address =
        |proof: Proof, offset, n| proof.hidden_values(base, 4096, params(offset, n)).map(|v| v.address);
    assert_eq!(address(proof, 256, 960), Ok(base + 256));
    assert_eq!(address(proof, 256, 961).unwrap_err().count, 961);
    assert_eq!(address(proof, 256, (-5i64) as u64), Ok(base), "no thread passes a negative count");
    let unsigned = Proof { kind: ProofKind::Indexed64 { bound: 1, signed: false }, ..proof };
    assert_eq!(address(unsigned, 256, (-5i64) as u64).unwrap_err().count, u64::MAX - 4, "read unsigned");
    assert_eq!(address(unsigned, 256, 0), Ok(base));
}

/// Rewritten modules with a 64-bit indexed proof broken on purpose: each a finding.
#[test]
fn the_checker_finds_a_64_bit_proof_a_rewriter_could_get_wrong() {
    let module =
        fence_ptx(&wide_body("\tld.global.f32 %f1, [%rd8];\n\tst.global.f32 [%rd8], %f1;\n")).unwrap();
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        let report = check(&text).unwrap();
        assert_eq!((report.clamped, report.proven), (0, 2));
        for (what, edited, kind) in [
            (
                "the fence's own check left out",
                text.replace("\t@%__kargs_ig1s64 ret;\n", ""),
                FindingKind::Unproven,
            ),
            (
                "the check signed the other way",
                text.replace("setp.ge.s64\t%__kargs_ig1s64", "setp.ge.u64\t%__kargs_ig1s64"),
                FindingKind::Unproven,
            ),
            (
                "a 32-bit check",
                text.replace(
                    "setp.ge.s64\t%__kargs_ig1s64, %__kargs_iy",
                    "setp.ge.s32\t%__kargs_ig1s64, %__kargs_ix",
                ),
                FindingKind::Unproven,
            ),
            (
                "the index of other parts",
                text.replace(
                    "mul.wide.u32\t%__kargs_iw, %__kargs_ic, %__kargs_in;",
                    "mul.wide.u32\t%__kargs_iw, %__kargs_ic, %__kargs_ic;",
                ),
                FindingKind::FenceRegister,
            ),
            (
                "a product of another size",
                text.replace(
                    "shl.b64\t%__kargs_iq4, %__kargs_iy, 2;",
                    "shl.b64\t%__kargs_iq4, %__kargs_iy, 3;",
                ),
                FindingKind::Unproven,
            ),
            (
                "the kernel's index scaled",
                text.replace("shl.b64\t%__kargs_iq4, %__kargs_iy, 2;", "shl.b64\t%__kargs_iq4, %rd1, 2;"),
                FindingKind::Unproven,
            ),
            (
                "the bound from another parameter",
                text.replace("ld.param.u64\t%__kargs_il1, [n];", "ld.param.u64\t%__kargs_il1, [p];"),
                FindingKind::Unproven,
            ),
            (
                "a label between the check and the access",
                text.replacen("\tadd.s64\t%__kargs_a0", "$L__kx:\n\tadd.s64\t%__kargs_a0", 1),
                FindingKind::Unproven,
            ),
        ] {
            let found = check(&edited).map(|_| ()).map_err(|f| f.kind);
            assert_eq!(found, Err(kind), "{what}");
        }
    }
}

/// A body with a `.shared` array of 1024 bytes whose accesses go through `arr + (x << 2)`, `x`
/// the block's index (not the thread's: see `confinements_of_the_threads_indices_are_made_once`).
fn shared_body(accesses: &str) -> String {
    format!(
        "\t.shared .align 4 .b8 arr[1024];\n\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, arr;\n\tshl.b32 %r3, %r1, 2;\n\
         \tadd.s32 %r4, %r2, %r3;\n{accesses}"
    )
}

/// Shared accesses `[V + (x << k) + c]` into an array of the entry's own, of a known size, keep
/// the kernel's own index, confined to the array's elements by one `min` with a constant (no
/// parameter: the array's size is in the module); a 16-bit index (`mul.wide.u16`) is widened
/// first. Near misses are clamped into the shared window as before.
#[test]
fn shared_accesses_into_an_array_confine_the_kernels_index() {
    let body = shared_body("\tld.shared.u32 %r5, [%r4];\n\tst.shared.u32 [%r4+4], %r5;\n");
    let module = fenced(&body);
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    // (1024 - 8) / 4: the last element whose 8 bytes of accesses fit.
    let clamp = at("min.u32 %__kargs_yx0, %r1, 254;");
    assert!(at("mov.u32 %__kargs_zv0, arr;") < at("mov.u32 %r1, %ctaid.x;"), "read in the leading run");
    assert_eq!(text[clamp + 1], "xor.b32 %__kargs_d, %r1, %__kargs_yx0;", "noted where moved");
    assert_eq!(text[clamp + 3], "shl.b32 %__kargs_zo0, %__kargs_yx0, 2;");
    assert_eq!(text[clamp + 4], "add.u32 %__kargs_zs0, %__kargs_zv0, %__kargs_zo0;");
    at("ld.shared.u32 %r5, [%__kargs_a0];");
    at("st.shared.u32 [%__kargs_a0+4], %r5;");
    assert!(!text.iter().any(|l| l.starts_with("min.u32 %__kargs_k")), "no window clamp: {text:#?}");
    assert!(!module.aligned_ptx().contains("xor.b32\t%__kargs_d, %r1"), "the aligned form notes nothing");
    // A byte loaded, times 4: the 16-bit index widened, then confined.
    let bins = fenced(&shared_body(
        "\tld.global.u8 %h1, [%rd1];\n\tmul.wide.u16 %r6, %h1, 4;\n\tadd.s32 %r7, %r2, %r6;\n\
         \tatom.shared.add.u32 %r5, [%r7], 1;\n",
    ));
    let text = lines(&bins);
    let widened = text.iter().position(|l| l == "cvt.u32.u16 %__kargs_yx0, %h1;").expect("widened");
    assert_eq!(text[widened + 1], "min.u32 %__kargs_yx0, %__kargs_yx0, 255;");
    // Not covered: clamped into the shared window.
    for (what, text) in [
        ("the index written between", body.replace("\tld.shared", "\tadd.s32 %r1, %r1, 1;\n\tld.shared")),
        (
            "a label between, the index written after the body's first",
            format!("$L_y:\n{}", body.replace("\tld.shared", "$L_x:\n\tld.shared")),
        ),
        ("a negative offset through the sum", body.replace("[%r4+4]", "[%r4+-4]")),
        ("a reach past the array", body.replace("[%r4+4]", "[%r4+1024]")),
    ] {
        let module = fenced(&text);
        assert!(!module.ptx().contains("%__kargs_zv0, arr"), "{what}: {}", module.ptx());
    }
    // A label between, the index `%ctaid.x` written once at the start: confined, and no window.
    let looped = fenced(&body.replace("\tld.shared", "$L_x:\n\tld.shared"));
    assert!(looped.ptx().contains("min.u32\t%__kargs_yx0, %r1, 254;"), "{}", looped.ptx());
    assert!(!looped.ptx().contains("__kargs_shared_pad"), "{}", looped.ptx());
}

/// A module whose entry `k(.param .u64 p)` walks an `.extern .shared` array through
/// `dyn + (x << 2)`.
fn dynamic_module(accesses: &str) -> String {
    format!(
        "{HEADER}.extern .shared .align 16 .b8 dyn[];\n.visible .entry k(\n\t.param .u64 p\n)\n{{\n\
         \t.reg .b64 %rd<4>;\n\t.reg .b32 %r<8>;\n\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, dyn;\n\
         \tshl.b32 %r3, %r1, 2;\n\tadd.s32 %r4, %r2, %r3;\n{accesses}\tret;\n}}\n"
    )
}

/// Shared accesses `[V + (x << k) + c]` into an `.extern .shared` array keep the kernel's own
/// index, confined by one `min` with `(%dynamic_smem_size - reach) >> k`, computed once at the
/// entry's start; the module states the least dynamic shared memory the launcher gives
/// (`MIN_DYNAMIC_SHARED`), on which that rests. A reach past the minimum is clamped into the
/// shared window as before.
#[test]
fn shared_accesses_into_an_extern_array_confine_the_kernels_index() {
    let module = fence_ptx(&dynamic_module("\tld.shared.u32 %r5, [%r4];\n\tst.shared.u32 [%r4+4], %r5;\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(module.dynamic_shared_min(), MIN_DYNAMIC_SHARED);
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    let size = at("mov.u32 %__kargs_zn, %dynamic_smem_size;");
    assert_eq!(text[size + 1], "sub.u32 %__kargs_zr8, %__kargs_zn, 8;");
    assert_eq!(text[size + 2], "shr.u32 %__kargs_zh8_2, %__kargs_zr8, 2;");
    let clamp = at("min.u32 %__kargs_yx0, %r1, %__kargs_zh8_2;");
    assert!(size < clamp);
    assert!(at("mov.u32 %__kargs_zv0, dyn;") < at("mov.u32 %r1, %ctaid.x;"), "read in the leading run");
    assert_eq!(text[clamp + 1], "xor.b32 %__kargs_d, %r1, %__kargs_yx0;", "noted where moved");
    assert_eq!(text[clamp + 3], "shl.b32 %__kargs_zo0, %__kargs_yx0, 2;");
    at("ld.shared.u32 %r5, [%__kargs_a0];");
    at("st.shared.u32 [%__kargs_a0+4], %r5;");
    assert!(!text.iter().any(|l| l.contains("__kargs_shared_pad")), "no window: {text:#?}");
    // A module without an `.extern .shared` array needs no dynamic shared memory.
    assert_eq!(fenced(&shared_body("\tld.shared.u32 %r5, [%r4];\n")).dynamic_shared_min(), 0);
    // A reach past the launcher's minimum: clamped into the shared window.
    let far =
        fence_ptx(&dynamic_module("\tld.shared.u32 %r5, [%r4+16];\n")).unwrap_or_else(|e| panic!("{e}"));
    assert!(!far.ptx().contains("%__kargs_zh"), "{}", far.ptx());
    assert!(far.ptx().contains("__kargs_shared_pad"), "{}", far.ptx());
}

/// Rewritten modules with a confined access into an `.extern .shared` array broken on purpose:
/// each a finding.
#[test]
fn the_checker_finds_a_confined_extern_access_a_rewriter_could_get_wrong() {
    let module = fence_ptx(&dynamic_module("\tld.shared.u32 %r5, [%r4];\n\tst.shared.u32 [%r4+4], %r5;\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        check(&text).unwrap();
        let room = "sub.u32\t%__kargs_zr8, %__kargs_zn, 8;";
        let hi = "shr.u32\t%__kargs_zh8_2, %__kargs_zr8, 2;";
        let min = "min.u32\t%__kargs_yx0, %r1, %__kargs_zh8_2;";
        let shl = "shl.b32\t%__kargs_zo0, %__kargs_yx0, 2;";
        for (what, edited) in [
            ("the bound left out", text.replace(min, "")),
            ("room for less than the accesses reach", text.replace(room, &room.replace(", 8;", ", 4;"))),
            ("room past the launcher's minimum", text.replace(room, &room.replace(", 8;", ", 17;"))),
            ("a smaller shift down", text.replace(hi, &hi.replace(", 2;", ", 1;"))),
            ("a larger shift up", text.replace(shl, &shl.replace(", 2;", ", 3;"))),
            ("the kernel's index shifted", text.replace(shl, "shl.b32\t%__kargs_zo0, %r1, 2;")),
            (
                "the room not from the launch's size",
                text.replace("mov.u32\t%__kargs_zn, %dynamic_smem_size;", "mov.u32\t%__kargs_zn, %r1;"),
            ),
            (
                "the bound written after the leading run",
                text.replace(min, &format!("mov.u32\t%__kargs_zh8_2, -1;\n\t{min}")),
            ),
            (
                "the kernel's address",
                text.replace("mov.u32\t%__kargs_zv0, dyn;", "mov.u32\t%__kargs_zv0, %r2;"),
            ),
            (
                "the array's address written after the leading run",
                text.replace(min, &format!("mov.u32\t%__kargs_zv0, dyn;\n\t{min}")),
            ),
        ] {
            assert_ne!(edited, text, "{what}");
            let found = check(&edited).map(|_| ()).map_err(|f| f.kind);
            assert!(found.is_err(), "{what}");
        }
    }
}

/// Rewritten modules with a confined shared access broken on purpose: each a finding.
#[test]
fn the_checker_finds_a_confined_shared_access_a_rewriter_could_get_wrong() {
    let module = fenced(&shared_body("\tld.shared.u32 %r5, [%r4];\n\tst.shared.u32 [%r4+4], %r5;\n"));
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        check(&text).unwrap();
        let min = "min.u32\t%__kargs_yx0, %r1, 254;";
        let shl = "shl.b32\t%__kargs_zo0, %__kargs_yx0, 2;";
        for (what, edited) in [
            ("the bound left out", text.replace(min, "")),
            (
                "a bound past the array's last element that fits",
                text.replace(min, &min.replace("254", "255")),
            ),
            ("a larger shift", text.replace(shl, &shl.replace(", 2;", ", 3;"))),
            ("the kernel's index shifted", text.replace(shl, "shl.b32\t%__kargs_zo0, %r1, 2;")),
            (
                "another array's address",
                text.replace("mov.u32\t%__kargs_zv0, arr;", "mov.u32\t%__kargs_zv0, %r2;"),
            ),
            (
                "the array's address written after the leading run",
                text.replace(min, &format!("mov.u32\t%__kargs_zv0, arr;\n\t{min}")),
            ),
        ] {
            let found = check(&edited).map(|_| ()).map_err(|f| f.kind);
            assert!(found.is_err(), "{what}");
        }
    }
}

/// A body with a two-dimensional `.shared` tile of 32 rows of 33 floats (4,224 bytes) whose
/// accesses go through `tile + ty * 132 + (tx << 2)`, as nvcc writes `tile[threadIdx.y][threadIdx.x]`.
fn tile_body(accesses: &str) -> String {
    format!(
        "\t.shared .align 4 .b8 tile[4224];\n\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ctaid.y;\n\tmov.u32 %r3, tile;\n\
         \tmad.lo.s32 %r4, %r2, 132, %r3;\n\tshl.b32 %r5, %r1, 2;\n\tadd.s32 %r6, %r4, %r5;\n{accesses}"
    )
}

/// Shared accesses `[V + y * S + (x << k) + c]` into a two-dimensional array of the entry's own
/// (a row `mad.lo.s32 A, y, S, V`, or `V + (y << s)`, plus an index shifted) keep the kernel's
/// two indices: the fence computes the whole offset itself and confines it to the array's size
/// less the accesses' reach, rounded down to the offset's alignment (the largest power of two,
/// at most 16, dividing both `S` and `2^k`), then adds the array's address. Accesses wider than
/// that alignment, and a row index written between, are clamped into the shared window.
#[test]
fn two_dimensional_shared_accesses_confine_the_whole_offset() {
    let body = tile_body("\tld.shared.f32 %f1, [%r6];\n\tst.shared.f32 [%r6+1056], %f1;\n");
    let module = fenced(&body);
    let text = lines(&module);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    let shift = at("shl.b32 %__kargs_zo0, %r1, 2;");
    assert_eq!(text[shift + 1], "mad.lo.u32 %__kargs_zs0, %r2, 132, %__kargs_zo0;");
    // (4224 - 1060), a multiple of 4: the last offset whose accesses (1,060 bytes) fit.
    assert_eq!(text[shift + 2], "min.u32 %__kargs_yx0, %__kargs_zs0, 3164;");
    assert_eq!(text[shift + 3], "xor.b32 %__kargs_d, %__kargs_zs0, %__kargs_yx0;", "noted where moved");
    assert_eq!(text[shift + 5], "add.u32 %__kargs_zs0, %__kargs_zv0, %__kargs_yx0;");
    at("ld.shared.f32 %f1, [%__kargs_a0];");
    at("st.shared.f32 [%__kargs_a0+1056], %f1;");
    assert!(!text.iter().any(|l| l.contains("__kargs_sb")), "no window: {text:#?}");
    // A row made by a shift: `tile + (y << 7)`, 128-byte rows.
    let shifted =
        fenced(&body.replace(
            "\tmad.lo.s32 %r4, %r2, 132, %r3;\n",
            "\tshl.b32 %r7, %r2, 7;\n\tadd.s32 %r4, %r3, %r7;\n",
        ));
    assert!(shifted.ptx().contains("mad.lo.u32\t%__kargs_zs0, %r2, 128, %__kargs_zo0;"), "{}", shifted.ptx());
    // A one-dimensional sum (`arr + (x << 2)`) plus another index shifted (`arr[x + s]`): the
    // sum is the row, of stride 4.
    let sum = fenced(&shared_body(
        "\tmov.u32 %r7, %tid.y;\n\tshl.b32 %r5, %r7, 2;\n\tadd.s32 %r6, %r4, %r5;\n\tld.shared.u32 %r0, [%r6];\n",
    ));
    let text = lines(&sum);
    assert!(text.contains(&"mad.lo.u32 %__kargs_zs0, %r1, 4, %__kargs_zo0;".to_owned()), "{text:#?}");
    assert!(text.contains(&"min.u32 %__kargs_yx0, %__kargs_zs0, 1020;".to_owned()), "{text:#?}");
    // Not covered: clamped into the shared window.
    for (what, text) in [
        ("the row index written between", body.replace("\tld.shared", "\tadd.s32 %r2, %r2, 1;\n\tld.shared")),
        ("a stride of two-byte alignment under a four-byte access", body.replace(", 132, %r3", ", 130, %r3")),
        ("a reach past the array", body.replace("[%r6+1056]", "[%r6+4224]")),
    ] {
        let module = fenced(&text);
        assert!(!module.ptx().contains("mad.lo.u32\t%__kargs_zs0"), "{what}: {}", module.ptx());
    }
}

/// Rewritten modules with a two-dimensional confined access broken on purpose: each a finding.
#[test]
fn the_checker_finds_a_two_dimensional_access_a_rewriter_could_get_wrong() {
    let module = fenced(&tile_body("\tld.shared.f32 %f1, [%r6];\n\tst.shared.f32 [%r6+1056], %f1;\n"));
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        check(&text).unwrap();
        let shl = "shl.b32\t%__kargs_zo0, %r1, 2;";
        let mad = "mad.lo.u32\t%__kargs_zs0, %r2, 132, %__kargs_zo0;";
        let min = "min.u32\t%__kargs_yx0, %__kargs_zs0, 3164;";
        let add = "add.u32\t%__kargs_zs0, %__kargs_zv0, %__kargs_yx0;";
        for (what, edited) in [
            ("the bound left out", text.replace(add, "add.u32\t%__kargs_zs0, %__kargs_zv0, %__kargs_zs0;")),
            (
                "a bound past the array's last offset that fits",
                text.replace(min, &min.replace("3164", "3168")),
            ),
            ("a bound not a multiple of the access", text.replace(min, &min.replace("3164", "3162"))),
            ("an odd stride", text.replace(mad, &mad.replace("132", "133"))),
            ("a smaller shift", text.replace(shl, &shl.replace(", 2;", ", 1;"))),
            ("the kernel's offset confined", text.replace(min, "min.u32\t%__kargs_yx0, %r6, 3164;")),
        ] {
            assert_ne!(edited, text, "{what}");
            let found = check(&edited).map(|_| ()).map_err(|f| f.kind);
            assert!(found.is_err(), "{what}");
        }
    }
}

/// A confined shared access whose indices are the thread's `%tid.x` and `%tid.y` (copied into
/// the kernel's registers once) has its confinement made once, in the leading run, from the
/// special registers themselves: each access adds the array's address to it (the clamped form
/// notes the index, or the two-dimensional offset, against it). One-dimensional, with a
/// constant or a dynamic bound, and two-dimensional.
#[test]
fn confinements_of_the_threads_indices_are_made_once() {
    let tid = |text: String| text.replace("%ctaid", "%tid");
    let accesses = "\tld.shared.u32 %r5, [%r4];\n\tst.shared.u32 [%r4+4], %r5;\n";
    let one = fenced(&tid(shared_body(accesses)));
    let text = lines(&one);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    let start = at("mov.u32 %__kargs_xt0, %tid.x;");
    assert_eq!(text[start + 1], "min.u32 %__kargs_xm0, %__kargs_xt0, 254;");
    assert_eq!(text[start + 2], "shl.b32 %__kargs_xc0, %__kargs_xm0, 2;");
    assert!(start < at("mov.u32 %r1, %tid.x;"), "in the leading run");
    let access = at("ld.shared.u32 %r5, [%__kargs_a0];");
    assert_eq!(text[access - 2], "add.u32 %__kargs_zs0, %__kargs_zv0, %__kargs_xc0;");
    assert_eq!(text[access - 4], "xor.b32 %__kargs_d, %r1, %__kargs_xm0;", "noted where moved");
    assert!(!text.iter().any(|l| l.starts_with("min.u32 %__kargs_yx")), "{text:#?}");
    let dynamic = fence_ptx(&tid(dynamic_module(accesses))).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        dynamic.ptx().contains("min.u32\t%__kargs_xm0, %__kargs_xt0, %__kargs_zh8_2;"),
        "{}",
        dynamic.ptx()
    );
    let tile = fenced(&tid(tile_body("\tld.shared.f32 %f1, [%r6];\n\tst.shared.f32 [%r6+1056], %f1;\n")));
    let text = lines(&tile);
    let at = |l: &str| text.iter().position(|t| t == l).unwrap_or_else(|| panic!("{l} in {text:#?}"));
    let start = at("mov.u32 %__kargs_xt0, %tid.x;");
    assert_eq!(text[start + 1], "mov.u32 %__kargs_xr0, %tid.y;");
    assert_eq!(text[start + 2], "shl.b32 %__kargs_xc0, %__kargs_xt0, 2;");
    assert_eq!(text[start + 3], "mad.lo.u32 %__kargs_xm0, %__kargs_xr0, 132, %__kargs_xc0;");
    assert_eq!(text[start + 4], "min.u32 %__kargs_xc0, %__kargs_xm0, 3164;");
    at("xor.b32 %__kargs_d, %__kargs_xm0, %__kargs_xc0;");
    // The checker: each made once, fixed (whatever the index: a `min` confines any value); a
    // bound past the array is found.
    for module in [&one, &dynamic, &tile] {
        for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
            check(&text).unwrap();
            let edits = [
                (
                    "the confinement written again",
                    text.replace(
                        "\tadd.u32\t%__kargs_zs0",
                        "\tmov.u32\t%__kargs_xc0, 0;\n\tadd.u32\t%__kargs_zs0",
                    ),
                ),
                (
                    "a bound past the array",
                    text.replace("%__kargs_xt0, 254;", "%__kargs_xt0, 255;")
                        .replace("%__kargs_xm0, 3164;", "%__kargs_xm0, 3168;")
                        .replace(
                            "shr.u32\t%__kargs_zh8_2, %__kargs_zr8, 2;",
                            "shr.u32\t%__kargs_zh8_2, %__kargs_zr8, 1;",
                        ),
                ),
            ];
            for (what, edited) in edits {
                assert_ne!(edited, text, "{what}");
                assert!(check(&edited).is_err(), "{what}");
            }
        }
    }
}

/// A grid-stride loop over `p` in entry `k(p, n)`, as nvcc writes `for (int i = blockIdx.x *
/// blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) p[i] += p[i]`, with `extra`
/// inside the loop after its accesses.
fn stride_loop_body(extra: &str) -> String {
    format!(
        "\tld.param.u32 %r2, [n];\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n\
         \tmad.lo.s32 %r1, %r3, %r4, %r5;\n\tsetp.ge.s32 %p1, %r1, %r2;\n\t@%p1 bra $L__BB0_3;\n\
         \tmov.u32 %r6, %nctaid.x;\n\tmul.lo.s32 %r7, %r4, %r6;\n\tcvta.to.global.u64 %rd2, %rd1;\n\
         $L__BB0_2:\n\tmul.wide.s32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.f32 %f1, [%rd4];\n\
         \tadd.f32 %f2, %f1, %f1;\n\tst.global.f32 [%rd4], %f2;\n{extra}\tadd.s32 %r1, %r1, %r7;\n\
         \tsetp.lt.s32 %p2, %r1, %r2;\n\t@%p2 bra $L__BB0_2;\n$L__BB0_3:\n"
    )
}

/// A grid-stride loop's accesses are an indexed proof's: the fence walks its own copy of the
/// index (the fence's index before the loop, where its own check proved it below `n`; the
/// kernel's step made on the copy), and the loop goes on while the copy is below `n`, unsigned,
/// so the copy is in `[0, n)` at every access whatever the step. The checker keeps the copy's
/// fact at the loop's head only where every branch back tests it so; and the copy, which the
/// kernel's index becomes, never holds anything of the host's.
#[test]
fn a_grid_stride_loops_accesses_are_proven_by_the_fences_walk() {
    let module = fenced(&stride_loop_body(""));
    let proof = Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed: true }, size: 4, align: 4 };
    assert_eq!(module.proofs("k"), [proof]);
    assert_eq!((module.accesses(), module.proven()), (0, 2));
    let text = lines(&module).join("\n");
    for line in [
        "mov.u32 %__kargs_ik, %__kargs_ix;\n$L__BB0_2:\nmul.wide.s32 %__kargs_ij4, %__kargs_ik, 4;",
        "add.s64 %__kargs_a0, %__kargs_ip0, %__kargs_ij4;\nld.global.f32 %f1, [%__kargs_a0];",
        "add.s32 %__kargs_ik, %__kargs_ik, %r7;\nmov.u32 %r1, %__kargs_ik;",
        "setp.lt.u32 %__kargs_iz, %__kargs_ik, %__kargs_im1;",
        "@%__kargs_iz bra $L__BB0_2;",
        "mov.u32 %r4, %__kargs_in;",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    for text in [module.ptx().to_owned(), module.aligned_ptx().to_owned()] {
        let report = check(&text).unwrap();
        assert_eq!((report.clamped, report.proven, report.counted), (0, 2, 1));
        for (what, broken, kind) in [
            (
                "the branch back under the kernel's test",
                text.replace("@%__kargs_iz bra\t$L__BB0_2;", "@%p2 bra\t$L__BB0_2;"),
                FindingKind::LoopHead,
            ),
            (
                "the test signed",
                text.replace("setp.lt.u32\t%__kargs_iz", "setp.lt.s32\t%__kargs_iz"),
                FindingKind::FenceRegister,
            ),
            (
                "the test of another register",
                text.replace("%__kargs_iz, %__kargs_ik,", "%__kargs_iz, %r1,"),
                FindingKind::LoopHead,
            ),
            (
                "the fence's own check left out",
                text.replace("\t@%__kargs_ig1s32 ret;\n", ""),
                FindingKind::Unproven,
            ),
            (
                "a branch to the head before it",
                text.replace(
                    "\tmov.u32\t%__kargs_ik, %__kargs_ix;\n",
                    "\tbra.uni\t$L__BB0_2;\n\tmov.u32\t%__kargs_ik, %__kargs_ix;\n",
                ),
                FindingKind::Unproven,
            ),
            (
                "a step by a fence register, copied to the kernel's",
                text.replace("%__kargs_ik, %__kargs_ik, %r7", "%__kargs_ik, %__kargs_ik, %__kargs_ix"),
                FindingKind::FenceRegister,
            ),
            (
                "the fence's base as the walk, tested and kept",
                text.replace(
                    "\tadd.s32\t%__kargs_ik, %__kargs_ik, %r7;\n\tmov.u32\t%r1, %__kargs_ik;\n",
                    "\tcvt.u32.u64\t%__kargs_ik, %__kargs_gb;\n",
                ),
                FindingKind::LoopHead,
            ),
        ] {
            assert_ne!(broken, text, "{what}: the edit applies");
            assert_eq!(check(&broken).map(|_| ()).map_err(|f| f.kind), Err(kind), "{what}");
        }
    }
    // Unsigned: the copy scaled unsigned.
    let unsigned = fenced(
        &stride_loop_body("")
            .replace("setp.ge.s32", "setp.ge.u32")
            .replace("setp.lt.s32", "setp.lt.u32")
            .replace("mul.wide.s32", "mul.wide.u32"),
    );
    assert_eq!((unsigned.accesses(), unsigned.proven()), (0, 2));
    assert!(lines(&unsigned).contains(&"mul.wide.u32 %__kargs_ij4, %__kargs_ik, 4;".to_owned()));
}

/// A loop that is not a grid-stride loop as the fence knows one keeps the ranged proof: a
/// second branch back, a label inside, the index written twice in it, tested against another
/// register than the bound, or scaled signed where it is compared unsigned.
#[test]
fn a_loop_the_walk_does_not_fit_keeps_its_ranged_proof() {
    let base = stride_loop_body("");
    for (what, body) in [
        (
            "a second branch back",
            stride_loop_body("\tsetp.eq.f32 %p3, %f2, 0f00000000;\n\t@%p3 bra $L__BB0_2;\n"),
        ),
        ("a label inside", stride_loop_body("$L__BB0_4:\n")),
        ("the index written twice", stride_loop_body("\tadd.s32 %r1, %r1, 1;\n")),
        (
            "tested against another register",
            base.replace("setp.lt.s32 %p2, %r1, %r2;", "setp.lt.s32 %p2, %r1, %r6;"),
        ),
        (
            "scaled signed, compared unsigned",
            base.replace("setp.ge.s32", "setp.ge.u32").replace("setp.lt.s32", "setp.lt.u32"),
        ),
    ] {
        let module = fenced(&body);
        assert!(!module.ptx().contains("%__kargs_ik"), "{what}: not walked\n{}", module.ptx());
        assert!(
            module.proofs("k").iter().any(|p| matches!(p.kind, ProofKind::Ranged { .. })),
            "{what}: {:?}",
            module.proofs("k")
        );
        for text in [module.ptx(), module.aligned_ptx()] {
            assert!(check(text).is_ok(), "{what}");
        }
    }
}

/// A byte's element (`cvt.s64.s32` of the index, times 1) is an indexed proof's as a wider one
/// is; and a register that reads `%tid.x` first and is written again later (nvcc reuses it as a
/// later loop's index) is `%tid.x` where the kernel computes the thread's index, where that later
/// write does not reach back to it.
#[test]
fn a_byte_index_and_a_reused_tid_register_are_proven() {
    let bytes = fenced(
        &proven_body("\tld.global.u8 %h1, [%rd4];\n\tst.global.u8 [%rd4+0], %h1;\n")
            .replace("mul.wide.s32 %rd3, %r1, 4;", "cvt.s64.s32 %rd3, %r1;"),
    );
    let proof = Proof { pointer: 0, kind: ProofKind::Indexed { bound: 1, signed: true }, size: 1, align: 1 };
    assert_eq!(bytes.proofs("k"), [proof]);
    assert_eq!((bytes.accesses(), bytes.proven()), (0, 2));
    // `%r5` reads `%tid.x`, the thread's index is made of it, then it is written again after
    // the loop: the loop is walked.
    let later =
        fenced(&format!("{}\tadd.s32 %r5, %r5, 1;\n\tst.global.u32 [%rd1], %r5;\n", stride_loop_body("")));
    assert!(later.ptx().contains("%__kargs_ik"), "{}", later.ptx());
    assert_eq!(
        later.proofs("k").first().map(|p| p.kind),
        Some(ProofKind::Indexed { bound: 1, signed: true })
    );
    // Written again before the index is made of it: not the thread's index, the loop's accesses
    // keep a ranged proof.
    let before = fenced(
        &stride_loop_body("")
            .replace("\tmov.u32 %r5, %tid.x;\n", "\tmov.u32 %r5, %tid.x;\n\tadd.s32 %r5, %r5, 1;\n"),
    );
    assert!(!before.ptx().contains("%__kargs_ik"), "{}", before.ptx());
    assert!(before.proofs("k").iter().all(|p| matches!(p.kind, ProofKind::Ranged { .. } | ProofKind::Fixed)));
    // Written again in a loop that reaches back to where the index is made of it: the same.
    let looped = fenced(&format!(
        "$L__BB0_9:\n{}\tadd.s32 %r5, %r5, 1;\n\tsetp.lt.s32 %p3, %r5, 7;\n\t@%p3 bra $L__BB0_9;\n",
        stride_loop_body("")
    ));
    assert!(!looped.ptx().contains("%__kargs_ik"), "{}", looped.ptx());
    for module in [&bytes, &later, &before, &looped] {
        for text in [module.ptx(), module.aligned_ptx()] {
            assert!(check(text).is_ok());
        }
    }
}
