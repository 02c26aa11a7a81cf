//! Running the bundled guest's `vector_add` launch through a launcher, into a [`Report`] of
//! what the host lowered and how the launch ended; printing it is [`super::render`]'s.

use kernel_args::{AbiError, LaunchHost, LaunchOutcome, LaunchRecord, Launcher};
use kernel_args_demo::guest::{GuestError, GuestModule, Runtime};

use crate::Status;

/// What the demo saw, before it is printed as text or JSON.
pub(super) struct Report {
    /// The runtime that ran the guest.
    pub(super) runtime: Runtime,
    /// The guest's element count.
    pub(super) n: i32,
    /// What the launcher is (printed after `launcher: `).
    pub(super) launcher: String,
    /// The host's record of what it handed the launcher; `None` when the host refused the call
    /// before any launcher ran.
    pub(super) launch: Option<LaunchRecord>,
    /// How the launch ended.
    pub(super) outcome: Outcome,
}

/// How the guest's launch ended.
pub(super) enum Outcome {
    /// Refused by the host before any launcher ran.
    Refused { code: i32, message: String },
    /// The kernel ran and every `out[i]` is right; `last` is `out[n - 1]` (none when `n` is 0).
    Launched { last: Option<f32>, outcome: Option<LaunchOutcome> },
    /// The kernel ran, but `out[index]` is `got`, not `expected`.
    WrongResult { index: i32, got: f32, expected: f32 },
    /// No CUDA device: the dry run recorded the launch.
    DryRun { message: String },
    /// The launcher refused or failed with `code`.
    Failed { code: i32, message: String },
}

/// Runs the guest's `vector_add` of `n` elements on `runtime` with `launcher` (described by
/// `description`) and checks every `out[i]` the launch wrote.
pub(super) fn run(
    runtime: Runtime,
    n: i32,
    launcher: Box<dyn Launcher>,
    description: &str,
) -> Result<Report, GuestError> {
    let mut guest = GuestModule::demo(runtime)?.instantiate(LaunchHost::new(launcher))?;
    let answer = guest.run_vector_add(n)?;
    let host = guest.host();
    let message = || host.last_error_message().unwrap_or_else(|| format!("guest answered {answer}"));
    let launch = host.last_launch().cloned();
    let outcome = match (&launch, AbiError::try_from(answer)) {
        (None, _) => Outcome::Refused { code: answer, message: message() },
        (Some(_), Err(_)) if answer == 0 => match guest.first_mismatch(n)? {
            None => Outcome::Launched {
                last: if n > 0 { Some(guest.out(n - 1)?) } else { None },
                outcome: launch.as_ref().and_then(|l| l.result().ok()),
            },
            Some(i) => {
                let index = i as i32;
                Outcome::WrongResult { index, got: guest.out(index)?, expected: 3.0 * index as f32 + 1.0 }
            }
        },
        (Some(_), Ok(AbiError::NotAvailable)) => Outcome::DryRun { message: message() },
        (Some(_), _) => Outcome::Failed { code: answer, message: message() },
    };
    Ok(Report { runtime, n, launcher: description.to_owned(), launch, outcome })
}

impl Report {
    /// The exit status: 0 when the kernel ran right or on a dry run, 1 otherwise.
    pub(super) fn status(&self) -> Status {
        match self.outcome {
            Outcome::Launched { .. } | Outcome::DryRun { .. } => Status::Accepted,
            Outcome::Refused { .. } | Outcome::WrongResult { .. } | Outcome::Failed { .. } => {
                Status::Rejected
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kernel_args::{HostError, KernelTable, LaunchRequest, PointerMode, Registered, SignatureCheck};
    use kernel_args_demo::guest::demo_kernels;

    use super::*;
    use crate::{parse_json_line, render};

    #[test]
    fn a_launcher_that_fails_is_reported() {
        struct Refuses(KernelTable);
        impl Launcher for Refuses {
            fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
                self.0.get(kernel_id)
            }
            fn launch(&mut self, _: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
                Err(HostError::msg(AbiError::InvalidKernel, "no kernel 1 registered"))
            }
        }
        for &runtime in Runtime::ALL {
            let report = run(runtime, 16, Box::new(Refuses(demo_kernels())), "refuses").unwrap();
            assert_eq!(report.status(), Status::Rejected);
            let text = render::text(&report);
            assert!(text.contains("the launch failed: InvalidKernel -3: no kernel 1 registered"), "{text}");
            assert!(text.contains("u32   16"), "{text}");
            let json = parse_json_line(&render::json(&report));
            assert_eq!(json["runtime"], runtime.name());
            assert_eq!(json["outcome"]["result"], "failed");
            assert_eq!(
                (json["outcome"]["code"].as_i64(), json["outcome"]["name"].as_str()),
                (Some(-3), Some("InvalidKernel"))
            );
            assert_eq!(json["launch"]["args"][3]["value"], 16);
        }
    }

    #[test]
    fn a_launcher_that_succeeds_without_running_is_caught() {
        // Claims success but writes nothing: `out` still holds the guest's NaN sentinel.
        struct Lies(KernelTable);
        impl Launcher for Lies {
            fn registered(&mut self, kernel_id: i64) -> Option<Registered<'_>> {
                self.0.get(kernel_id)
            }
            fn launch(&mut self, _: &LaunchRequest<'_, '_>) -> Result<LaunchOutcome, HostError> {
                Ok(LaunchOutcome { pointer_mode: PointerMode::Direct, signature: SignatureCheck::Skipped })
            }
        }
        for &runtime in Runtime::ALL {
            let report = run(runtime, 8, Box::new(Lies(demo_kernels())), "lies").unwrap();
            assert_eq!(report.status(), Status::Rejected);
            let text = render::text(&report);
            assert!(text.contains("outcome: launched, but out[0] = NaN where a[0] + b[0] = 1"), "{text}");
            let json = parse_json_line(&render::json(&report));
            assert_eq!(
                json["outcome"],
                serde_json::json!({"result": "wrong_result", "index": 0, "got": "NaN", "expected": "1.0"})
            );
        }
    }
}
