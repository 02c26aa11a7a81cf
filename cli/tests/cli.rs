//! The `kargs` command line: exit statuses, input forms, encode output, the human output and
//! where each goes (results on stdout, diagnostics on stderr), colour.
//!
//! The human output is compared with golden files in `tests/golden/`; after an intended
//! change, rewrite them with `UPDATE_GOLDEN=1 cargo test -p kernel-args-cli --test cli`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn kargs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kargs")).args(args).output().unwrap()
}

fn kargs_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kargs"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        expected == actual,
        "{} differs (UPDATE_GOLDEN=1 rewrites it)\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

/// One record of each type: i32 -7, u64 42, f32 1.5, f64 1.5, ptr [64, +128), f32 signalling
/// NaN, f64 -0, i64 min, u32 max.
const MIXED: &str = "01f9ffffff 062a00000000000000 030000c03f 04000000000000f83f 074000000080000000 \
                     030100a07f 040000000000000080 020000000000000080 05ffffffff";

#[test]
fn golden_table() {
    let out = kargs(&["decode", MIXED]);
    assert_eq!(code(&out), 0);
    assert!(out.stderr.is_empty());
    golden("decode_table.txt", &stdout(&out));
}

#[test]
fn golden_diagnostics() {
    let cases = [
        ("decode_unknown_tag.txt", vec!["decode", "0501000000 0502000000 0503000000 ff"]),
        ("decode_truncated.txt", vec!["decode", "0501000000 0502000000 0503000000 0504000000 02010203"]),
        ("decode_window.txt", vec!["decode", "--mem-len", "100", "0501000000 07 60000000 08000000"]),
        ("decode_window_default_memory.txt", vec!["decode", "07 00000100 01000000"]),
    ];
    for (file, args) in cases {
        let out = kargs(&args);
        assert_eq!(code(&out), 1, "{file}");
        assert!(out.stdout.is_empty(), "{file}: a diagnostic goes to stderr");
        golden(file, &stderr(&out));
    }
}

#[test]
fn caret_sits_under_the_offending_byte() {
    let out = kargs(&["decode", "0501000000 0502000000 0503000000 ff"]);
    let text = stderr(&out);
    assert!(text.starts_with("error[InvalidArgs -9]: unknown tag 0xff at byte 15 (record 3)\n"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let row = lines.iter().position(|l| l.starts_with("0x00 | ")).unwrap();
    let caret = lines[row + 1].find('^').unwrap();
    assert_eq!(&lines[row][caret..caret + 2], "ff");
}

#[test]
fn limits_in_the_human_output() {
    let too_long = "00".repeat(4097);
    let out = kargs(&["decode", &too_long]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with(
        "error[KernelArgsUnsupported -10]: argv buffer is 4097 bytes, over the cap of 4096 bytes\n"
    ));
    let too_many = "0500000000".repeat(129);
    let out = kargs(&["decode", &too_many]);
    assert_eq!(code(&out), 1);
    let text = stderr(&out);
    assert!(text.contains("record 128 at byte 640"), "{text}");
    assert!(text.contains("\n0x280 | 05"), "the gutter's offsets are hex: {text}");
}

#[test]
fn empty_and_json_outputs() {
    let out = kargs(&["decode", ""]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "accepted: 0 arguments in 0 bytes (guest memory: 65536 bytes)\n")
    );
    let out = kargs(&["decode", "--json", ""]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "{\"ok\":true,\"args\":[]}\n"));
    let out = kargs(&["decode", "--json", "06ffffffffffffffff 020000000000000080"]);
    assert_eq!(
        stdout(&out),
        "{\"ok\":true,\"args\":[{\"index\":0,\"offset\":0,\"type\":\"u64\",\"value\":18446744073709551615},\
         {\"index\":1,\"offset\":9,\"type\":\"i64\",\"value\":-9223372036854775808}]}\n"
    );
    let out = kargs(&["decode", "--json", "0501000000 0502000000 0503000000 ff"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        stdout(&out),
        "{\"ok\":false,\"error\":{\"code\":-9,\"name\":\"InvalidArgs\",\"kind\":\"unknown_tag\",\"index\":3,\
         \"offset\":15,\"message\":\"unknown tag 0xff at byte 15 (record 3)\"}}\n"
    );
}

#[test]
fn hex_from_stdin_and_whitespace() {
    let expected = stdout(&kargs(&["decode", "--json", "01f9ffffff0740000000800000"]));
    let out = kargs_stdin(&["decode", "--json", "-"], "01 f9ff\tffff\n07 40000000\r\n  800000\n");
    assert_eq!((code(&out), stdout(&out)), (1, expected.clone()), "same (truncated) answer from stdin");
    let out = kargs(&["decode", "--json", "01", "f9ffffff", "07 40000000", "800000"]);
    assert_eq!(stdout(&out), expected, "several HEX arguments are joined");
    let out = kargs_stdin(&["decode", "-"], "");
    assert_eq!(code(&out), 0, "empty stdin is an empty argv");
    // Without `-`: a pipe is read when no HEX is given.
    let out = kargs_stdin(&["decode", "--json"], "01 f9ffffff 07 40000000 800000");
    assert_eq!((code(&out), stdout(&out)), (1, expected));
}

#[test]
fn usage_errors_exit_2() {
    let cases: [&[&str]; 14] = [
        &["decode", "0g"],
        &["decode", "012"],
        &["decode", "0x01"],
        &["decode", "--mem-len", "4294967297", ""],
        &["decode", "--mem-len", "0x100000001", ""],
        &["decode", "--mem-len", "-1", ""],
        &["decode", "--mem-len", "lots", ""],
        &["decode", "-", "01"],
        &["encode"],
        &["encode", "i32:2147483648"],
        &["encode", "f32:1e40"],
        &["encode", "x:1"],
        &["decode", "--color", "sometimes", "01"],
        &["frobnicate"],
    ];
    for args in cases {
        let out = kargs(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr(&out).starts_with("error: "), "{args:?}: {}", stderr(&out));
    }
    assert!(stderr(&kargs(&["decode", "012"])).contains("3 hex digits is an odd count"));
    assert!(stderr(&kargs(&["encode", "u32:7", "f32:0x1ffffffff"])).contains("argument 1 `f32:0x1ffffffff`"));
    assert!(
        stderr(&kargs(&["decode", "0x01f9ffffff"]))
            .contains("hint: the argv is its bytes' hex digits without a `0x` prefix: `01f9ffffff`"),
        "{}",
        stderr(&kargs(&["decode", "0x01f9ffffff"]))
    );
    assert!(stderr(&kargs(&["encode"])).contains("no arguments to encode"));
    let out = kargs(&["encode", "f64:1e400"]);
    assert!(stderr(&out).contains("out of the range of an f64"), "{}", stderr(&out));
}

#[test]
fn numbers_take_0x_wherever_a_number_is() {
    assert_eq!(code(&kargs(&["decode", "--mem-len", "0x100", "07 00010000 00000000"])), 0);
    assert_eq!(code(&kargs(&["decode", "--mem-len", "0xff", "07 00010000 00000000"])), 1);
    assert_eq!(code(&kargs(&["decode", "--mem-len", "0x100000000", ""])), 0, "the largest memory");
    let out = kargs(&["encode", "i32:-0x10", "i64:0x10", "u32:0x10", "ptr:0x40:0x80"]);
    assert_eq!(stdout(&out), "01f0ffffff0210000000000000000510000000074000000080000000\n");
    let shaped = "k(p: &mut [u8; grid.x * block.x])";
    let out = kargs(&[
        "decode",
        "--signature",
        shaped,
        "--grid",
        "0x4",
        "--block",
        "0x20,1",
        "07 00000000 80000000",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn stdin_for_encode_and_encode_json() {
    let want = stdout(&kargs(&["encode", "i32:-7", "ptr:64:128"]));
    for args in [&["encode", "-"][..], &["encode"][..]] {
        let out = kargs_stdin(args, "i32:-7\n  ptr:64:128\n");
        assert_eq!((code(&out), stdout(&out)), (0, want.clone()), "{args:?}");
    }
    assert_eq!(code(&kargs_stdin(&["encode", "-"], " \n")), 2, "no arguments on stdin");
    let out = kargs(&["encode", "--json", "i32:-7", "ptr:64:128"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        stdout(&out),
        "{\"ok\":true,\"hex\":\"01f9ffffff074000000080000000\",\"len\":14,\"args\":[\
         {\"index\":0,\"offset\":0,\"type\":\"i32\",\"value\":-7},\
         {\"index\":1,\"offset\":5,\"type\":\"ptr\",\"guest_offset\":64,\"len\":128}]}\n"
    );
    let mut args = vec!["encode".to_owned(), "--json".to_owned()];
    args.extend((0..129).map(|i| format!("u32:{i}")));
    let out = kargs(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&out), 1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (json["ok"].as_bool(), json["error"]["kind"].as_str()),
        (Some(false), Some("too_many_records"))
    );
    assert_eq!(json["error"]["index"], 128);
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let red = "\x1b[1;31merror[InvalidArgs -9]\x1b[0m: unknown tag 0xff";
    let run = |args: &[&str], no_color: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kargs"));
        command.args(args).env_remove("NO_COLOR");
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        stderr(&command.output().unwrap())
    };
    assert!(run(&["--color", "always", "decode", "ff"], None).starts_with(red));
    assert!(run(&["decode", "--color", "always", "ff"], Some("1")).starts_with(red), "the flag wins");
    assert!(run(&["decode", "--color", "never", "ff"], None).starts_with("error[InvalidArgs -9]"));
    // auto: stderr is a pipe here, so no colour, with or without NO_COLOR.
    assert!(run(&["decode", "ff"], None).starts_with("error[InvalidArgs -9]"));
    assert!(run(&["decode", "ff"], Some("1")).starts_with("error[InvalidArgs -9]"));
    // Results are never coloured.
    let out = kargs(&["--color", "always", "decode", "--json", "ff"]);
    assert!(!stdout(&out).contains('\x1b'));
    assert!(!stdout(&kargs(&["--color", "always", "encode", "u32:1"])).contains('\x1b'));
}

#[test]
fn mem_len_bounds_are_inclusive() {
    for mem in ["0", "4294967296"] {
        assert_eq!(code(&kargs(&["decode", "--mem-len", mem, "07 00000000 00000000"])), 0, "{mem}");
    }
    assert_eq!(code(&kargs(&["decode", "--mem-len", "4294967296", "07 ffffffff 01000000"])), 0);
    assert_eq!(code(&kargs(&["decode", "--mem-len", "4294967295", "07 ffffffff 01000000"])), 1);
}

#[test]
fn encode_prints_lowercase_hex() {
    let out = kargs(&["encode", "i32:-7", "u64:42", "f32:1.5", "f64:0x3ff8000000000000", "ptr:64:128"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), "01f9ffffff062a00000000000000030000c03f04000000000000f83f074000000080000000\n");
    let out = kargs(&["encode", "f32:0x7fa00001", "f64:-0", "u32:0xFFFFFFFF", "i64:-9223372036854775808"]);
    assert_eq!(stdout(&out), "030100a07f04000000000000008005ffffffff020000000000000080\n");
}

#[test]
fn encode_then_decode_round_trips() {
    let args = ["i32:-2147483648", "f32:NaN", "f64:-inf", "u64:18446744073709551615", "ptr:65535:1"];
    let hex = stdout(&kargs(&["encode"].into_iter().chain(args).collect::<Vec<_>>()));
    let out = kargs(&["decode", "--json", hex.trim()]);
    assert_eq!(code(&out), 0);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let types: Vec<&str> =
        json["args"].as_array().unwrap().iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["i32", "f32", "f64", "u64", "ptr"]);
    assert_eq!(json["args"][1]["bits"], "0x7fc00000");
    assert_eq!(json["args"][2]["value"], "-inf");
}

#[test]
fn encode_past_the_record_cap_exits_1() {
    let args: Vec<String> =
        std::iter::once("encode".to_owned()).chain((0..129).map(|i| format!("u32:{i}"))).collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = kargs(&refs);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
    assert_eq!(stderr(&out), "error: cannot encode: argument 128 is past the cap of 128 arguments\n");
    assert_eq!(code(&kargs(&refs[..129])), 0, "128 arguments encode");
}

const VECTOR_ADD: &str = "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)";

/// `vector_add`'s argv with `out`'s window `out_len` bytes long and `a` the record `a`.
fn vector_add_argv(a: &str, out_len: &str) -> String {
    format!("{a} 07 40000000 40000000 07 80000000 {out_len} 05 10000000")
}

#[test]
fn signature_refusals_point_at_the_record() {
    let cases = [
        // A count past the window.
        ("decode_signature_short.txt", vector_add_argv("07 00000000 40000000", "10000000")),
        // A raw u64 where the kernel takes a pointer.
        ("decode_signature_type.txt", vector_add_argv("06 0000000040000000", "40000000")),
        // A window misaligned for f32.
        ("decode_signature_misaligned.txt", vector_add_argv("07 02000000 40000000", "40000000")),
        // Three arguments for four parameters.
        (
            "decode_signature_count.txt",
            "07 00000000 40000000 07 40000000 40000000 07 80000000 40000000".to_owned(),
        ),
    ];
    for (file, hex) in cases {
        let out = kargs(&["decode", "--signature", VECTOR_ADD, &hex]);
        assert_eq!(code(&out), 1, "{file}");
        assert!(out.stdout.is_empty(), "{file}: a diagnostic goes to stderr");
        golden(file, &stderr(&out));
    }
}

#[test]
fn signature_accepted_and_shaped() {
    let out =
        kargs(&["decode", "--signature", VECTOR_ADD, &vector_add_argv("07 00000000 40000000", "40000000")]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).ends_with(
            "\nfits the declaration of vector_add (grid 1,1,1, block 1,1,1, shared memory 0 bytes)\n"
        ),
        "{}",
        stdout(&out)
    );
    // An extent over the launch shape: 4 * 32 bytes fit a 128-byte window, not a 64-byte one.
    let shaped = "k(p: &mut [u8; grid.x * block.x])";
    let args = |len: &str| {
        vec!["decode", "--signature", shaped, "--grid", "4", "--block", "32,1,1", "07 00000000"]
            .into_iter()
            .map(str::to_owned)
            .chain([len.to_owned()])
            .collect::<Vec<_>>()
    };
    let run = |len: &str| {
        let args = args(len);
        kargs(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    assert_eq!(code(&run("80000000")), 0);
    let out = run("40000000");
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with(
        "error[InvalidArgs -9]: record 0 at byte 0: p: 64-byte window, the kernel touches grid.x * block.x = 128 bytes\n"
    ));
}

#[test]
fn signature_json_and_errors() {
    let out = kargs(&[
        "decode",
        "--json",
        "--signature",
        VECTOR_ADD,
        &vector_add_argv("06 0000000040000000", "40000000"),
    ]);
    assert_eq!(code(&out), 1);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(json["args"].as_array().unwrap().len(), 4);
    assert_eq!(json["signature"], serde_json::json!({"kernel": "vector_add", "ok": false}));
    // A refusal's error is at `.error`, whatever refused it.
    assert_eq!(json["error"]["kind"], "type");
    assert_eq!((json["error"]["index"].as_u64(), json["error"]["offset"].as_u64()), (Some(0), Some(0)));
    let out = kargs(&[
        "decode",
        "--json",
        "--signature",
        VECTOR_ADD,
        &vector_add_argv("07 00000000 40000000", "40000000"),
    ]);
    assert_eq!(code(&out), 0);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((json["ok"].as_bool(), json["signature"]["ok"].as_bool()), (Some(true), Some(true)));
    // A wire error comes first: no verdict.
    let out = kargs(&["decode", "--json", "--signature", VECTOR_ADD, "ff"]);
    assert_eq!(code(&out), 1);
    assert!(!stdout(&out).contains("signature"));
    // A declaration that does not parse is a usage error, with a caret under its column.
    let out = kargs(&["decode", "--signature", "k(a: &[f32; m], n: u32)", "0501000000"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--signature: column 13: `m` is not a parameter of this kernel\n  k(a: &[f32; m], n: u32)\n              ^"), "{}", stderr(&out));
    // The shape needs a declaration.
    assert_eq!(code(&kargs(&["decode", "--grid", "4", "0501000000"])), 2);
}

/// `decode --signature` approves a launch exactly when the host does: the same shape check
/// (limits and order: the shape before the argv), then the same declaration check, compared
/// with `LaunchHost::call` over the dry run on shapes around every limit.
#[test]
fn the_signature_check_approves_exactly_what_the_host_accepts() {
    use kernel_args::{AbiError, Declaration, DryRunLauncher, LaunchCall, LaunchHost, LaunchLimits};

    const DECLARATION: &str = "k(p: &mut [u8; n], n: u32)";
    // p = [256, +16), n = 16; the same bytes at offset 0 of the host's memory.
    let argv = [7u8, 0, 1, 0, 0, 16, 0, 0, 0, 5, 16, 0, 0, 0];
    let hex: String = argv.iter().map(|b| format!("{b:02x}")).collect();
    let mut memory = vec![0u8; 65_536];
    memory[..argv.len()].copy_from_slice(&argv);
    let mut dry_run = DryRunLauncher::new();
    dry_run.kernels_mut().declare(1, Declaration::parse(DECLARATION).unwrap()).unwrap();
    let mut host = LaunchHost::new(dry_run);

    let max_shared = LaunchLimits::DEFAULT.max_shared_mem_bytes;
    let shapes: Vec<([i32; 3], [i32; 3], i32)> = [
        ([1, 1, 1], [1, 1, 1], 0),
        ([0, 1, 1], [32, 1, 1], 0),
        // Every dimension at its maximum: past the default threads quota (QuotaExceeded);
        // 2^32 threads exactly are within it.
        ([2_147_483_647, 65_535, 65_535], [1024, 1, 1], 0),
        ([4_194_304, 1, 1], [1024, 1, 1], 0),
        ([1, 65_536, 1], [1, 1, 1], 0),
        ([1, 1, 65_536], [1, 1, 1], 0),
        ([4, 1, 1], [0, 1, 1], 0),
        ([4, 1, 1], [1024, 1, 1], 0),
        ([4, 1, 1], [1025, 1, 1], 0),
        ([4, 1, 1], [2000, 1, 1], 0),
        ([4, 1, 1], [1, 1024, 1], 0),
        ([4, 1, 1], [1, 1, 64], 0),
        ([4, 1, 1], [1, 1, 65], 0),
        ([4, 1, 1], [32, 32, 1], 0),
        ([4, 1, 1], [33, 32, 1], 0),
        ([4, 1, 1], [16, 16, 4], 0),
        ([4, 1, 1], [16, 16, 5], 0),
        ([4, 1, 1], [32, 1, 1], i32::try_from(max_shared).unwrap()),
        ([4, 1, 1], [32, 1, 1], i32::try_from(max_shared).unwrap() + 1),
        ([4, 1, 1], [32, 1, 1], i32::MAX),
    ]
    .into();
    let mut refused = 0;
    for (grid, block, shared_mem) in shapes {
        let call = LaunchCall { shared_mem, args_ptr: 0, args_len: 14, ..LaunchCall::new(1, grid, block) };
        let host_code = host.call(Some(&mut memory), &call);
        let dims = |d: [i32; 3]| format!("{},{},{}", d[0], d[1], d[2]);
        let out = kargs(&[
            "decode",
            "--signature",
            DECLARATION,
            "--grid",
            &dims(grid),
            "--block",
            &dims(block),
            "--shared-mem",
            &shared_mem.to_string(),
            &hex,
        ]);
        let what = format!("grid {grid:?} block {block:?} shared {shared_mem}: {}", stderr(&out));
        if host_code == AbiError::NotAvailable.code() {
            assert_eq!(code(&out), 0, "{what}");
            assert!(stdout(&out).contains("fits the declaration of k"), "{what}");
        } else if host_code == AbiError::QuotaExceeded.code() {
            refused += 1;
            assert_eq!(code(&out), 1, "{what}");
            let message = host.last_error().unwrap().to_string();
            let message = message.strip_prefix("QuotaExceeded -6: ").unwrap();
            assert!(stderr(&out).starts_with(&format!("error[QuotaExceeded -6]: {message}\n")), "{what}");
        } else {
            assert_eq!(host_code, AbiError::InvalidDimensions.code(), "{what}");
            refused += 1;
            assert_eq!(code(&out), 1, "{what}");
            // The same message, with the code in the diagnostic's brackets.
            let message = host.last_error().unwrap().to_string();
            let message = message.strip_prefix("InvalidDimensions -8: ").unwrap();
            assert!(stderr(&out).starts_with(&format!("error[InvalidDimensions -8]: {message}\n")), "{what}");
        }
    }
    assert_eq!(refused, 12, "the shapes straddle every limit");
    // JSON: the shape's refusal at `.error` too.
    let out = kargs(&["decode", "--json", "--signature", DECLARATION, "--grid", "0", &hex]);
    assert_eq!(code(&out), 1);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"ok": false, "error": {"code": -8, "name": "InvalidDimensions",
            "kind": "launch_shape", "message": "grid.x is 0, must be at least 1"}})
    );
    // The threads quota's refusal too: 2^22 + 1 blocks of 1024 threads, one block past 2^32.
    let out = kargs(&[
        "decode",
        "--json",
        "--signature",
        DECLARATION,
        "--grid",
        "4194305",
        "--block",
        "1024",
        &hex,
    ]);
    assert_eq!(code(&out), 1);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"ok": false, "error": {"code": -6, "name": "QuotaExceeded", "kind": "quota",
            "message": "threads per launch (grid × block) would be 4294968320, the quota is 4294967296"}})
    );
    // What a guest cannot pass is a usage error: dimensions are i32s.
    let out = kargs(&["decode", "--signature", DECLARATION, "--grid", "2147483648", &hex]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// Under `--json`, a usage error is a JSON object on stdout too (its error at `.error`, kind
/// `usage`), with clap's diagnostic on stderr and exit status 2; `--json` after `--` is an
/// operand, not the flag.
#[test]
fn usage_errors_under_json_are_json() {
    for args in [
        &["decode", "--json", "--mem-len", "x", "00"][..],
        &["decode", "--json", "zz"],
        &["decode", "--json", "--signature", "k(p: *mut u8)", "00"],
        &["encode", "--json", "i32"],
        &["encode", "--json", "--bogus", "i32:1"],
    ] {
        let out = kargs(args);
        assert_eq!(code(&out), 2, "{args:?}");
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(
            (json["ok"].as_bool(), json["error"]["kind"].as_str()),
            (Some(false), Some("usage")),
            "{args:?}"
        );
        let message = json["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty() && stderr(&out).contains(message), "{args:?}: {message}");
    }
    let out = kargs(&["decode", "--mem-len", "x", "00"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (2, ""), "no JSON without --json");
    let out = kargs(&["encode", "--", "--json"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (2, ""), "an operand `--json` is not the flag");
    // The declaration error names every pointer form.
    let out = kargs(&["decode", "--signature", "k(p: *mut u8)", "00"]);
    assert!(
        stderr(&out).contains("`&[T; n]`, `&mut [T; n]` or `&out [T; n]`), found `*`"),
        "{}",
        stderr(&out)
    );
    // encode's help lists all seven types.
    let help = stdout(&kargs(&["encode", "--help"]));
    for ty in ["i32", "i64", "u32", "u64", "f32", "f64", "ptr:OFFSET:LEN"] {
        assert!(help.contains(ty), "{ty} missing from encode --help:\n{help}");
    }
}
