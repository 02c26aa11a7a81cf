//! Colour in diagnostics: `--color auto|always|never`, `NO_COLOR`, and the styles a diagnostic
//! uses (those of rustc's: the error line bold red, the gutter and notes bold blue, the marks
//! under the offending bytes bold red).
//!
//! `auto` colours when stderr is a terminal (and `TERM` is not `dumb`) and `NO_COLOR` is unset
//! or empty (<https://no-color.org>); `always` and `never` decide alone. Only diagnostics are
//! coloured: results on stdout (a table, hex, JSON) never are.

use std::io::IsTerminal;

use clap::ValueEnum;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ColorChoice {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Whether diagnostics are coloured, and the colouring itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paint {
    on: bool,
}

/// SGR sequences: bold red, bold blue, and the reset.
const RED: &str = "\x1b[1;31m";
const BLUE: &str = "\x1b[1;34m";
const RESET: &str = "\x1b[0m";

impl Paint {
    /// No colour.
    #[cfg(test)]
    pub(crate) const PLAIN: Paint = Paint { on: false };

    /// The colouring `choice` gives diagnostics written to this process's stderr.
    pub(crate) fn for_stderr(choice: ColorChoice) -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Paint::new(choice, std::io::stderr().is_terminal() && !dumb, no_color)
    }

    /// The colouring `choice` gives on a stream that is (or is not) a colour terminal, with
    /// `NO_COLOR` set (or not).
    fn new(choice: ColorChoice, terminal: bool, no_color: bool) -> Paint {
        let on = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Paint { on }
    }

    fn wrap(self, style: &str, text: &str) -> String {
        if self.on && !text.is_empty() { format!("{style}{text}{RESET}") } else { text.to_owned() }
    }

    /// An error's headline (`error[...]`, `error:`).
    pub(crate) fn error(self, text: &str) -> String {
        self.wrap(RED, text)
    }

    /// The gutter of an excerpt and the `=` of a note.
    pub(crate) fn gutter(self, text: &str) -> String {
        self.wrap(BLUE, text)
    }

    /// The marks under the offending bytes, and their label.
    pub(crate) fn marks(self, text: &str) -> String {
        self.wrap(RED, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_terminal_and_no_color() {
        assert!(Paint::new(ColorChoice::Auto, true, false).on);
        assert!(!Paint::new(ColorChoice::Auto, false, false).on);
        assert!(!Paint::new(ColorChoice::Auto, true, true).on);
        assert!(Paint::new(ColorChoice::Always, false, true).on);
        assert!(!Paint::new(ColorChoice::Never, true, false).on);
    }

    #[test]
    fn plain_text_is_untouched_and_colour_is_reset() {
        assert_eq!(Paint::PLAIN.error("error"), "error");
        let on = Paint::new(ColorChoice::Always, false, false);
        assert_eq!(on.error("error"), "\x1b[1;31merror\x1b[0m");
        assert_eq!(on.gutter(""), "");
    }
}
