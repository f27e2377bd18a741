//! The end-to-end tests, one module per subject, in one test binary: one
//! link of the whole program instead of one per file, which is most of
//! what the suite's build used to cost. Load tests take `common::serial()`
//! so that timing-sensitive runs never overlap on a small machine.

#[allow(dead_code)]
mod common;

mod arrivals;
mod cli;
mod dashboard;
mod deploy;
mod dropin;
mod edges;
mod events;
mod events_aiohttp;
mod faults;
mod flows;
mod grpc;
mod http;
mod http2;
mod http2_faults;
mod http2_nginx;
mod http2_truth;
mod http3;
mod install;
mod layers;
mod llm;
mod longrun;
mod lua;
mod matrix;
mod outputs;
mod phases;
mod pool;
mod preflight;
mod prometheus;
mod python_check;
mod rate;
mod replay;
mod shard;
mod slo;
mod slurm;
mod streams;
mod sweep;
mod tls;
mod ws;
mod ws_serve;
