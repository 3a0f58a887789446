//! `authtimed`'s library side: its command line, so that the man page and
//! the shell completions can be generated from the same definitions.

pub mod args;
