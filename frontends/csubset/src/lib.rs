//! The C-subset front end shared by every pgpu source language.
