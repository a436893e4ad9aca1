//! Kafka's index files: `.index`, `.timeindex`, `.txnindex` and tiered `.indexes` slices.
