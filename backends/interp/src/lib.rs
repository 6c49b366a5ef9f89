//! The reference interpreter for pgpu IR.
