//! Index seeks, cross-checked against batch headers.
