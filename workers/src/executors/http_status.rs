//! Mapping HTTP statuses and reqwest errors to failure classes.
