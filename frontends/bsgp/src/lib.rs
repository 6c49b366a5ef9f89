//! The BSGP frontend (seeds/bsgp.txt).
