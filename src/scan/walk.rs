//! One walk over a file's batch headers, shared by pruning, cuts and the transaction pass.
