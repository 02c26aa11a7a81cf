//! Where a subcommand's input comes from, one rule for `decode` and `encode`: its arguments, or
//! stdin for a lone `-`, or for no argument at all when stdin is not a terminal (a pipe, a file).

use std::io::{IsTerminal, Read};

/// The input's text: stdin's, under the rule above, or `None` when the arguments are the input
/// (`what` names it in the errors: `HEX`, `ARG`).
///
/// # Errors
///
/// `-` among other arguments, or stdin that cannot be read.
pub(crate) fn stdin_text(arguments: &[String], what: &str) -> Result<Option<String>, String> {
    let from_stdin = match arguments {
        [only] => only == "-",
        [] => !std::io::stdin().is_terminal(),
        _ if arguments.iter().any(|a| a == "-") => {
            return Err(format!("`-` (read stdin) must be the only {what} argument"));
        }
        _ => false,
    };
    if !from_stdin {
        return Ok(None);
    }
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| format!("cannot read {what} from stdin: {e}"))?;
    Ok(Some(text))
}
