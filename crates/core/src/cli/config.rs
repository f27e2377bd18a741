//! What the engine needs, derived once from what the user typed.
//!
//! [`Config::from_args`] checks every combination of flags, resolves the
//! target and spreads connections over threads. Each failure is a
//! [`ConfigError`] whose one-line message names the problem and the fix.

use std::time::Duration;

use std::sync::Arc;

use super::bench::Connections;
use super::bench::{Arrival, BenchArgs};
use super::outputs::SinkFlags;
use super::profile::{load_profile_file, ProfileSpec};
use crate::clock::nanos;
use crate::engine::setup::{
    spread, Calls, Growth, Identity, Protocol, Protocols, TlsOptions, Trust,
};
use crate::engine::{Replay, Setup};
use crate::http::h1::request::{check_header_value, check_token};
use crate::http::h2::DEFAULT_MAX_STREAMS;
use crate::http::protocol::MAX_MESSAGE;
use crate::http::ws::{self, Conversation};
use crate::llm::{Api, BodyOptions, Llm, Source};
use crate::replay::{Order, ReplayError, RequestSet, MAX_ENDPOINTS};
use crate::schedule::{Load, Process, Profile, Spacing, MAX_RATE};
use crate::target::{parse_target_pinned, Pin, Scheme, Target, TargetError};
use crate::verdict::{Measure, Slo, Timed};
use metron_grpc::{Method, Schema, Shape};
use metron_pem::{self as pem, PemError};

/// The longest run: far beyond any benchmark, far below where nanosecond
/// timestamps would overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// A validated run configuration: what the engine runs, and what is
/// reported of it.
#[derive(Clone, Debug)]
pub struct Config {
    /// The run itself, as the engine takes it.
    pub run: Setup,
    pub latency: bool,
    pub u_latency: bool,
    pub outputs: Outputs,
    /// `--slo`: the objective the run is judged against.
    pub slo: Option<Slo>,
    /// `--lag-allowance`: the send lag p99 within which the generator kept
    /// its schedule; `None`, one interval of a thread's schedule.
    pub lag_allowance: Option<Duration>,
}

/// `--timeout` when not given: wrk's, and with `--llm`, long enough for an
/// answer of a few thousand tokens to stream to its end.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
pub const LLM_TIMEOUT: Duration = Duration::from_secs(60);

/// Words of each made-up prompt of `--llm` without `--prompts` or
/// `--prompt-words`.
pub const DEFAULT_PROMPT_WORDS: u64 = 32;

/// `-d` when neither it nor a rate profile says otherwise.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// What to produce besides the text report.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The outputs fed by the run's intervals and its result.
    pub sinks: SinkFlags,
    pub histogram: bool,
    pub timeseries: bool,
    pub thread_timeseries: bool,
    pub timeseries_interval: Duration,
    pub quiet: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("{0}")]
    Target(#[from] TargetError),
    #[error("-t 0: at least one thread is needed, e.g. -t 1")]
    NoThreads,
    #[error("-c {connections} is fewer than -t {threads}: every thread needs a connection; raise -c to at least {threads} or lower -t")]
    FewerConnections { connections: u64, threads: u64 },
    #[error("--max-connections {max} is below -c {connections}: it is the most the pool grows to; give at least {connections}")]
    MaxBelowConnections { max: u64, connections: u64 },
    #[error("{0} grows the connections for requests that fall due with every stream busy, which only rate mode has: add -R, or give -c a number")]
    GrowthWithoutRate(&'static str),
    #[error("-d 0: the test needs a positive duration, e.g. -d 10s")]
    NoDuration(Duration),
    #[error(
        "-d {0:?} is longer than a year: metron's clock arithmetic stops there; use a shorter -d"
    )]
    LongDuration(Duration),
    #[error(
        "-R {0}: the rate must be above zero (omit -R to run a closed loop as fast as possible)"
    )]
    NoRate(f64),
    #[error("-R {0:e}: above 1G requests/s the schedule's times would be less than 1 ns apart; use -R 1G or less, or omit -R for a closed loop")]
    HugeRate(f64),
    #[error("--warmup {warmup:?} is not shorter than -d {duration:?}: nothing would be measured; shorten --warmup or lengthen -d")]
    WarmupTooLong {
        warmup: Duration,
        duration: Duration,
    },
    #[error("--visit-timeout 0: a visit needs some time, e.g. --visit-timeout 30s")]
    ZeroVisitTimeout,
    #[error("--timeout 0: the timeout must be above zero, e.g. --timeout 2s")]
    NoTimeout,
    #[error("-H '{0}': not a header; write it as 'Name: value'")]
    Header(String),
    #[error("-H '{header}': {why}; write it as 'Name: value'")]
    BadHeader { header: String, why: String },
    #[error("-a {cpus}: CPU {cpu} is not available to this process (it may use {available}); pick CPUs from that list")]
    Affinity {
        cpus: String,
        cpu: usize,
        available: String,
    },
    #[error("--max-head {0}: allow between 1k and 1G bytes of response head, e.g. --max-head 64k")]
    MaxHead(u64),
    #[error("{0}")]
    Requests(#[from] ReplayError),
    #[error("--requests: the file sends to {file}, but the URL is {url}://: a run speaks WebSocket or HTTP, not both; {fix}")]
    WebSocketAndHttp {
        file: String,
        url: &'static str,
        fix: &'static str,
    },
    #[error("--requests goes to {hosts} hosts, so each of the {threads} threads needs {hosts} connections: raise -c to at least {needed} or lower -t")]
    HostConnections {
        hosts: usize,
        threads: usize,
        needed: usize,
    },
    #[error("--by-endpoint: the file has more than {MAX_ENDPOINTS} distinct endpoints; group requests with a \"name\" field")]
    Endpoints,
    #[error("{flag} needs --requests FILE")]
    NeedsRequests { flag: &'static str },
    #[error("{flag} shapes --llm's requests; add --llm (or drop {flag})")]
    NeedsLlm { flag: &'static str },
    #[error("{flag} with --llm: {why}; drop {flag}")]
    LlmWith {
        flag: &'static str,
        why: &'static str,
    },
    #[error("--llm-body's \"{field}\" and {flag} both set it; keep one")]
    LlmBodyClash {
        field: &'static str,
        flag: &'static str,
    },
    #[error("{0}")]
    LlmValue(&'static str),
    #[error("--seed only seeds --arrival poisson and --requests-order random; add one of them, or drop --seed")]
    SeedUnused,
    #[error("--shard {spec}: {why}")]
    Shard { spec: String, why: String },
    #[error("--shard splits a schedule between instances, and a closed loop has none; add -R (the total rate of all instances) or --rate-profile")]
    ShardNeedsRate,
    #[error("--shard with --arrival poisson needs --seed N, the same on every instance, so that they all draw one schedule")]
    ShardNeedsSeed,
    #[error("--start-at is {late:.1}s in the past, longer ago than the whole {duration:?} run; give a time in the future (e.g. date -d '+1 min' +%s)")]
    StartAtPast { late: f64, duration: Duration },
    #[error("--arrival poisson spreads the requests of a rate at random; add -R or --rate-profile (without them the run is a closed loop)")]
    PoissonNeedsRate,
    #[error("--rate-profile {0}")]
    ProfileFile(String),
    #[error("-d {duration:?} and --rate-profile ({profile:?} long) disagree; drop -d (it defaults to the profile's length), or make them agree")]
    ProfileDuration {
        duration: Duration,
        profile: Duration,
    },
    #[error("metron sweep {0}")]
    Sweep(String),
    #[error("--slo {0}: in throughput mode there is no intended rate to reach; add -R or --rate-profile, or drop that term")]
    SloRateWithoutRate(String),
    #[error("--slo {term}: {why}, so the term could never be met; {fix}")]
    SloNeverMeasured {
        term: String,
        why: &'static str,
        fix: &'static str,
    },
    #[error("{flag} only applies to {tls}:// hosts, and this run has none; drop {flag}, or load a URL that begins {tls}://")]
    TlsUnused {
        flag: &'static str,
        tls: &'static str,
    },
    #[error("{flag} needs {needs}")]
    TlsPair {
        flag: &'static str,
        needs: &'static str,
    },
    #[error("-k accepts any certificate, so --cacert {0} would never be used; drop one of them")]
    CacertInsecure(String),
    #[error("{0}")]
    Pem(#[from] PemError),
    #[error("--interval {0:?}: intervals must be at least 10ms, e.g. --interval 1s")]
    Interval(Duration),
    #[error("--timeseries-interval {0:?}: use a positive multiple of 10ms, e.g. 250ms")]
    SeriesInterval(Duration),
    #[error("--interval only sets the intervals of {}, and none is given; add one of them, or drop --interval", SinkFlags::named())]
    IntervalUnused,
    #[error("--dashboard-linger only sets how long --dashboard stays up, and it is not given; add --dashboard, or drop --dashboard-linger")]
    LingerWithoutDashboard,
    #[error("--timeseries-interval only sets the interval of --timeseries and --thread-timeseries, and neither is given; add one of them, or drop --timeseries-interval")]
    SeriesIntervalUnused,
    #[error("{0:?} after the URL would go to a script's init(args), but there is no script; add -s FILE, or drop the extra words")]
    ArgsWithoutScript(String),
    #[error("-m {0}: streams per connection go from 1 to 2^31-1, e.g. -m 100")]
    MaxStreams(u64),
    #[error("-m only sets HTTP/2's and HTTP/3's streams per connection, and this run speaks HTTP/1.1; add --http2 (or --alpn h2,http/1.1, or --http3), or drop -m")]
    StreamsWithoutHttp2,
    #[error("--0rtt sends requests as QUIC's early data, and this run does not speak HTTP/3; add --http3, or drop --0rtt")]
    ZeroRttWithoutHttp3,
    #[error("--http3 runs over QUIC, which is always encrypted, and {0} is not an https:// URL; write it as https://")]
    Http3NeedsHttps(String),
    #[error(
        "--alpn {list:?}: {why}; list h2 and http/1.1, preferred first, e.g. --alpn h2,http/1.1"
    )]
    Alpn { list: String, why: String },
    #[error("--alpn only applies to https:// hosts, and this run has none; for HTTP/2 over plain TCP (h2c) use --http2")]
    AlpnUnused,
    #[error("{0}")]
    Grpc(#[from] metron_grpc::GrpcError),
    #[error("--grpc {0} needs the schema of its messages: add --proto FILE (the .proto that defines it) or --protoset FILE")]
    GrpcNoSchema(String),
    #[error("{0} only applies to --grpc calls; add --grpc package.Service/Method, or drop {0}")]
    GrpcOnly(&'static str),
    #[error("--data is a gRPC call's request or a WebSocket message; add --grpc package.Service/Method, load a ws:// URL, or drop --data (a POST body goes in a script: wrk.body)")]
    DataNeedsGrpcOrWebSocket,
    #[error("{flag} does not apply to a {scheme}:// URL: WebSocket upgrades an HTTP/1.1 connection and sends messages on it; drop {flag}, or load an http(s):// URL")]
    NotForWebSocket {
        flag: &'static str,
        scheme: &'static str,
    },
    #[error("-H {name}: {why}; drop it for a {scheme}:// URL")]
    WebSocketField {
        name: String,
        why: &'static str,
        scheme: &'static str,
    },
    #[error("--ws-match with --ws push: a push has no answers to match; drop one of them")]
    MatchPush,
    #[error("--ws-match \"{0}\": give a field's name, or a dotted path such as params.id")]
    MatchField(String),
    #[error("--ws-match {field}: the message sent ({given}) is not JSON with a field {field}, so no answer could match it; give --data one that has it, or drop --ws-match")]
    MatchData { field: String, given: &'static str },
    #[error("--data holds {0} bytes, more than a message may (16 MiB); send a smaller one")]
    MessageTooLarge(usize),
    #[error("--data is not UTF-8 text, which a text message must be; add --ws-binary to send it as a binary message")]
    MessageNotText,
    #[error("{flag} applies to ws:// and wss:// URLs only; write the URL as {ws}://host:port/path, or drop {flag}")]
    WebSocketOnly {
        flag: &'static str,
        ws: &'static str,
    },
    #[error("--ws-ping below 10ms: pings that close together flood the connection instead of keeping it alive; give a period such as --ws-ping 5s, or drop it")]
    PingEvery,
    #[error("--data {given}: cannot read {path}: {why}; check the file's path")]
    DataFile {
        given: String,
        path: String,
        why: String,
    },
    #[error("--grpc calls go over HTTP/2, which metron's gRPC speaks; drop --http3")]
    GrpcOverHttp3,
    #[error("--import-path finds the imports of --proto files, and --protoset holds its imports already; drop --import-path")]
    ImportPathUnused,
    #[error("--resolve {given:?}: {why}; write it as HOST:PORT:ADDR, e.g. --resolve app.test:8443:127.0.0.1")]
    Resolve { given: String, why: String },
    #[error("--resolve {given:?} pins {host}:{port}, which no host of this run is ({hosts}); give a host and port of the URL, or drop it")]
    ResolveUnused {
        given: String,
        host: String,
        port: u16,
        hosts: String,
    },
}

impl Config {
    pub fn from_args(args: &BenchArgs) -> Result<Config, ConfigError> {
        if args.threads == 0 {
            return Err(ConfigError::NoThreads);
        }
        let connections = args.connections.initial(args.threads);
        if connections < args.threads {
            return Err(ConfigError::FewerConnections {
                connections,
                threads: args.threads,
            });
        }
        let profile = profile(args)?;
        let duration = match (&profile, args.duration) {
            (Some(p), given) => {
                let length = Duration::from_nanos(p.length().unwrap_or(0));
                match given {
                    Some(d) if d != length => {
                        return Err(ConfigError::ProfileDuration {
                            duration: d,
                            profile: length,
                        })
                    }
                    _ => length,
                }
            }
            (None, d) => d.unwrap_or(DEFAULT_DURATION),
        };
        let warmup = args.warmup.unwrap_or(Duration::ZERO);
        if duration.is_zero() {
            return Err(ConfigError::NoDuration(duration));
        }
        if duration > MAX_DURATION {
            return Err(ConfigError::LongDuration(duration));
        }
        if let Some(r) = args.rate {
            if r <= 0.0 {
                return Err(ConfigError::NoRate(r));
            }
            if r > MAX_RATE {
                return Err(ConfigError::HugeRate(r));
            }
        }
        if warmup >= duration {
            return Err(ConfigError::WarmupTooLong { warmup, duration });
        }
        if args.visit_timeout.is_some_and(|t| t.is_zero()) {
            return Err(ConfigError::ZeroVisitTimeout);
        }
        let timeout = args.timeout.unwrap_or(match args.llm {
            Some(_) => LLM_TIMEOUT,
            None => DEFAULT_TIMEOUT,
        });
        if timeout.is_zero() {
            return Err(ConfigError::NoTimeout);
        }
        if let (None, Some(word)) = (&args.script, args.script_args.first()) {
            return Err(ConfigError::ArgsWithoutScript(word.clone()));
        }
        let mut headers: Vec<(String, String)> = args
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        let pins = pins(&args.resolve)?;
        let target = parse_target_pinned(&args.url, &pins)?;
        let websocket = websocket(args, &target, &headers)?;
        let call = call(args, websocket.is_some())?;
        if call.is_some() {
            add_call_headers(&mut headers, timeout);
        }
        let load = load(args, profile, duration)?;
        let load = match &args.shard {
            None => load,
            Some(_) if !load.is_open() => return Err(ConfigError::ShardNeedsRate),
            Some(_) if load.spacing().and_then(Spacing::seed).is_some() && args.seed.is_none() => {
                return Err(ConfigError::ShardNeedsSeed)
            }
            Some(spec) => {
                let shard = spec
                    .resolve(|name| std::env::var(name).ok())
                    .map_err(|why| ConfigError::Shard {
                        spec: spec.to_string(),
                        why,
                    })?;
                load.split(shard)
            }
        };
        if let Some(at) = args.start_at {
            check_start_at(at, duration)?;
        }
        if let Some(slo) = &args.slo {
            let rate_term = slo.terms.iter().find(|t| t.measure == Measure::Rate);
            if let (Some(t), false) = (rate_term, load.is_open()) {
                return Err(ConfigError::SloRateWithoutRate(t.text.clone()));
            }
        }
        let outputs = outputs(args)?;
        let interval = interval(args.interval, &outputs)?;
        let threads = args.threads as usize;
        let affinity = match &args.affinity {
            Some(cpus) => Some(check_affinity(&cpus.0)?),
            None => None,
        };
        let conns_per_thread = spread(connections as usize, threads);
        let growth = growth(args, connections, &load)?;
        let llm = llm(args, &target)?;
        let replay = match &llm {
            Some(l) => Some(llm_requests(args, l, &target, &headers, &pins)?),
            None => replay(
                args,
                &target,
                &headers,
                &pins,
                &conns_per_thread,
                call.as_ref(),
            )?,
        };
        let llm = llm.map(|(l, ..)| l);
        let calls = match &call {
            None => None,
            Some(method) => Some(Calls {
                method: method.name(),
                body: method.request(args.data.as_deref().unwrap_or("{}"), "--data")?,
                streaming: method.shape() == Shape::ServerStreaming,
                check: match &args.grpc_check {
                    Some(spec) => Some(Arc::new(method.check(spec)?)),
                    None => None,
                },
            }),
        };
        let hosts = match &replay {
            Some(r) => r.set.hosts(),
            None => std::slice::from_ref(&target),
        };
        if let Some(t) = hosts.iter().find(|t| t.websocket != target.websocket) {
            let (file, url) = (t.scheme_name(), target.scheme_name());
            return Err(ConfigError::WebSocketAndHttp {
                file: format!("{file}://{}", t.authority),
                url,
                fix: if target.websocket {
                    "write the file's URLs as ws:// or wss://, or give it paths only"
                } else {
                    "give a ws:// or wss:// URL on the command line, or write the file's URLs as \
                     http:// or https://"
                },
            });
        }
        check_pins_used(&args.resolve, &pins, hosts)?;
        let tls = tls_options(args, hosts)?;
        let protocols = protocols(args, hosts)?;
        let run = Setup {
            url: args.url.clone(),
            target,
            threads,
            conns_per_thread,
            growth,
            duration,
            warmup,
            timeout,
            visit_timeout: args.visit_timeout,
            load,
            start_at: args.start_at,
            headers,
            affinity,
            tls,
            protocols,
            max_head: max_head(args.max_head)?,
            sse: args.sse,
            llm,
            calls,
            message: match (&websocket, &args.data) {
                (None, _) => None,
                (Some(_), Some(data)) => Some(data_bytes(data)?),
                // A subscription says nothing unless told what to say.
                (Some(c), None) if c.shape == ws::Shape::Push => Some(Vec::new()),
                (Some(_), None) => Some(DEFAULT_MESSAGE.to_vec()),
            },
            websocket,
            script: args.script.clone(),
            script_args: args.script_args.clone(),
            replay,
            interval,
            counts_every: (outputs.timeseries || outputs.thread_timeseries)
                .then_some(outputs.timeseries_interval),
            script_output_to_stderr: outputs.sinks.json_on_stdout(),
        };
        if let Some(slo) = &args.slo {
            check_slo_measured(slo, &run)?;
        }
        Ok(Config {
            run,
            latency: args.latency || args.u_latency,
            u_latency: args.u_latency,
            outputs,
            slo: args.slo.clone(),
            lag_allowance: args.lag_allowance,
        })
    }
}

/// Refuses the `--slo` terms that `run` cannot measure, as a rate term
/// without a rate is refused: accepted, each would print "not measured"
/// after the whole run, however well the server did. Events are read only
/// with `--sse` and from server-streaming calls; a TLS handshake is timed
/// only over TLS on TCP (HTTP/3's is inside QUIC's, timed as its connect).
/// `metron sweep` checks its objective here too, with its first step's run.
pub fn check_slo_measured(slo: &Slo, run: &Setup) -> Result<(), ConfigError> {
    let hosts = match &run.replay {
        Some(r) => r.set.hosts(),
        None => std::slice::from_ref(&run.target),
    };
    let streams = run.sse
        || run.llm.is_some()
        || run.calls.as_ref().is_some_and(|c| c.streaming)
        || run.protocols.pushes;
    let over_quic = run.protocols.offer.first() == Some(&Protocol::Http3);
    let over_tls = hosts.iter().any(|t| t.scheme == Scheme::Https);
    for t in &slo.terms {
        let never = |why, fix| {
            Err(ConfigError::SloNeverMeasured {
                term: t.text.clone(),
                why,
                fix,
            })
        };
        let flow = match t.measure {
            Measure::Time(timed, _) => timed.is_flow(),
            m => m == Measure::VisitsFailed,
        };
        if flow && run.script.is_none() {
            return never(
                "visit and step terms judge the visits of a script's flow(visit)",
                "add -s FILE with a flow(visit), or drop that term",
            );
        }
        let tokens = match t.measure {
            Measure::Time(timed, _) => timed.is_token(),
            m => m == Measure::Goodput,
        };
        if tokens && run.llm.is_none() {
            return never(
                "token terms judge the answers of --llm",
                "add --llm, or drop that term",
            );
        }
        if t.measure == Measure::Goodput
            && run
                .llm
                .as_ref()
                .is_some_and(|l| l.goodput == Default::default())
        {
            return never(
                "goodput counts the requests that met --goodput's bounds, and none were given",
                "add --goodput \"ttft<500ms,tpot<50ms\", or drop that term",
            );
        }
        let Measure::Time(timed, _) = t.measure else {
            continue;
        };
        if timed.is_event() && !streams {
            return match &run.calls {
                Some(_) => never(
                    "the method of --grpc is unary: its replies have no messages to time",
                    "call a server-streaming method, or drop that term",
                ),
                None => never(
                    "events are read only with --sse (or from a server-streaming --grpc method, \
                     or a ws:// URL's --ws push)",
                    match run.websocket {
                        Some(_) => "add --ws push for a server that pushes, or drop that term",
                        None => "add --sse, or drop that term",
                    },
                ),
            };
        }
        if timed == Timed::Tls && over_quic {
            return never(
                "HTTP/3 has no TLS handshake of its own: TLS runs inside QUIC's handshake, \
                 which connect_ times",
                "bound connect_ instead (connect_p99<...), or drop that term",
            );
        }
        if timed == Timed::Tls && !over_tls {
            return never(
                "this run has no https:// host, and no TLS handshake to time",
                "load an https:// URL, or drop that term",
            );
        }
    }
    Ok(())
}

/// `--rate-profile`, read (from its file, if it names one) and built.
fn profile(args: &BenchArgs) -> Result<Option<Profile>, ConfigError> {
    let phases = match &args.rate_profile {
        None => return Ok(None),
        Some(ProfileSpec::Phases(p)) => p.clone(),
        Some(ProfileSpec::File(path)) => load_profile_file(path)
            .map_err(|why| ConfigError::ProfileFile(format!("@{}: {why}", path.display())))?,
    };
    Ok(Some(Profile::new(phases)))
}

/// The load: the closed loop without a rate; with one, evenly spaced or
/// Poisson arrivals under `-R` or the profile, their seed given or from
/// the clock.
fn load(
    args: &BenchArgs,
    profile: Option<Profile>,
    duration: Duration,
) -> Result<Load, ConfigError> {
    let arrival = args.arrival.unwrap_or(Arrival::Constant);
    let profile = match (profile, args.rate) {
        (Some(p), _) => p,
        (None, Some(r)) if arrival == Arrival::Constant => return Ok(Load::constant(r)),
        (None, Some(r)) => Profile::constant(r),
        (None, None) if arrival == Arrival::Poisson => return Err(ConfigError::PoissonNeedsRate),
        (None, None) => return Ok(Load::Closed),
    };
    let spacing = match arrival {
        Arrival::Constant => Spacing::Even,
        Arrival::Poisson => Spacing::Poisson {
            seed: args.seed.unwrap_or_else(clock_seed),
        },
    };
    let process = Process::new(profile, spacing, nanos(duration));
    Ok(Load::Open(Arc::new(process)))
}

/// A start that is already past is allowed (the instance was late, and
/// says so), unless the whole run would be over.
fn check_start_at(at: std::time::SystemTime, duration: Duration) -> Result<(), ConfigError> {
    match std::time::SystemTime::now().duration_since(at) {
        Ok(late) if late >= duration => Err(ConfigError::StartAtPast {
            late: late.as_secs_f64(),
            duration,
        }),
        _ => Ok(()),
    }
}

/// A seed from the clock, short enough to type back in as `--seed`.
fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos() as u64 % 1_000_000)
}

/// What may be spoken, from `--http2`, `--http3`, `--alpn`, `-m` and `--0rtt`:
/// HTTP/1.1 alone unless another version is asked for.
fn protocols(args: &BenchArgs, hosts: &[Target]) -> Result<Protocols, ConfigError> {
    let (offer, asked_by) = match &args.alpn {
        Some(list) => {
            if !hosts.iter().any(|t| t.scheme == Scheme::Https) {
                return Err(ConfigError::AlpnUnused);
            }
            (alpn_list(list)?, Some(format!("--alpn {list}")))
        }
        None if args.http2 => (vec![Protocol::Http2], Some("--http2".to_string())),
        // gRPC runs over HTTP/2 only.
        None if args.grpc.is_some() => (vec![Protocol::Http2], Some("--grpc".to_string())),
        None if args.http3 => {
            if let Some(t) = hosts.iter().find(|t| t.scheme != Scheme::Https) {
                return Err(ConfigError::Http3NeedsHttps(format!(
                    "http://{}",
                    t.authority
                )));
            }
            (vec![Protocol::Http3], Some("--http3".to_string()))
        }
        // The other protocols' flags were refused with a ws:// URL.
        None if hosts.iter().any(|t| t.websocket) => (vec![Protocol::WebSocket], None),
        None => (vec![Protocol::Http1], None),
    };
    if args.zero_rtt && !offer.contains(&Protocol::Http3) {
        return Err(ConfigError::ZeroRttWithoutHttp3);
    }
    let max_streams = match args.max_streams {
        Some(_) if !offer.iter().any(|p| p.multiplexes()) => {
            return Err(ConfigError::StreamsWithoutHttp2)
        }
        Some(m) if m == 0 || m > i32::MAX as u64 => return Err(ConfigError::MaxStreams(m)),
        Some(m) => m as u32,
        None => DEFAULT_MAX_STREAMS,
    };
    Ok(Protocols {
        offer,
        max_streams,
        asked_by,
        zero_rtt: args.zero_rtt,
        calls: args.grpc.is_some(),
        pushes: args.ws == Some(ws::Shape::Push),
    })
}

/// An echo's message when `--data` gives none.
const DEFAULT_MESSAGE: &[u8] = b"hello";
/// The shortest `--ws-ping` period: a keep-alive, not a flood.
const MIN_PING: Duration = Duration::from_millis(10);

/// A `ws://` or `wss://` URL: what every connection's upgrade says and
/// how its messages go; the flags of other protocols are refused with it,
/// and its own without it.
fn websocket(
    args: &BenchArgs,
    target: &Target,
    headers: &[(String, String)],
) -> Result<Option<Arc<Conversation>>, ConfigError> {
    if !target.websocket {
        let own = [
            (args.ws_binary, "--ws-binary"),
            (args.ws.is_some(), "--ws"),
            (args.ws_ping.is_some(), "--ws-ping"),
            (args.ws_deflate, "--ws-deflate"),
            (args.ws_match.is_some(), "--ws-match"),
        ];
        return match own.iter().find(|(on, _)| *on) {
            Some(&(_, flag)) => Err(ConfigError::WebSocketOnly {
                flag,
                ws: match target.scheme {
                    Scheme::Http => "ws",
                    Scheme::Https => "wss",
                },
            }),
            None => Ok(None),
        };
    }
    if args.ws_ping.is_some_and(|t| t < MIN_PING) {
        return Err(ConfigError::PingEvery);
    }
    let scheme = match target.scheme {
        Scheme::Http => "ws",
        Scheme::Https => "wss",
    };
    let others = [
        (args.http2, "--http2"),
        (args.http3, "--http3"),
        (args.alpn.is_some(), "--alpn"),
        (args.zero_rtt, "--0rtt"),
        (args.max_streams.is_some(), "-m"),
        (args.grpc.is_some(), "--grpc"),
        (args.sse, "--sse"),
        (args.llm.is_some(), "--llm"),
    ];
    if let Some(&(_, flag)) = others.iter().find(|(on, _)| *on) {
        return Err(ConfigError::NotForWebSocket { flag, scheme });
    }
    let refused = [
        (
            "sec-websocket-extensions",
            "the only extension metron speaks, permessage-deflate, is offered with --ws-deflate",
        ),
        ("content-length", "a message's frame carries its length"),
        ("transfer-encoding", "a message's frame carries its length"),
        ("upgrade", "the upgrade writes its own (Upgrade: websocket)"),
        (
            "connection",
            "the upgrade writes its own (Connection: Upgrade)",
        ),
        (
            "sec-websocket-key",
            "each connection's upgrade makes a fresh key",
        ),
        (
            "sec-websocket-version",
            "metron speaks version 13, RFC 6455's, and says so",
        ),
    ];
    for (name, _) in headers {
        let lower = name.to_ascii_lowercase();
        if let Some((_, why)) = refused.iter().find(|(n, _)| *n == lower) {
            return Err(ConfigError::WebSocketField {
                name: name.clone(),
                why,
                scheme,
            });
        }
    }
    let shape = args.ws.unwrap_or_default();
    let matching = match &args.ws_match {
        None => None,
        Some(_) if shape == ws::Shape::Push => return Err(ConfigError::MatchPush),
        Some(f) if f.is_empty() || f.split('.').any(str::is_empty) => {
            return Err(ConfigError::MatchField(f.clone()))
        }
        Some(f) => Some(ws::pointer(f)),
    };
    // The messages --data (or its default, hello) makes must carry the
    // field; a script's or a requests file's are their own.
    if let (Some(pointer), Some(field)) = (&matching, &args.ws_match) {
        let own = args.script.is_some() || args.requests.is_some();
        let message = match &args.data {
            Some(data) => data_bytes(data)?,
            None => DEFAULT_MESSAGE.to_vec(),
        };
        if !own && ws::field_of(&message, pointer).is_none() {
            let given = match args.data {
                Some(_) => "--data",
                None => "hello, as no --data was given",
            };
            let field = field.clone();
            return Err(ConfigError::MatchData { field, given });
        }
    }
    if let Some(data) = &args.data {
        let message = data_bytes(data)?;
        if message.len() > MAX_MESSAGE {
            return Err(ConfigError::MessageTooLarge(message.len()));
        }
        if !args.ws_binary && std::str::from_utf8(&message).is_err() {
            return Err(ConfigError::MessageNotText);
        }
    }
    Ok(Some(Arc::new(Conversation {
        path: target.path.clone(),
        fields: headers.to_vec(),
        binary: args.ws_binary,
        shape,
        ping: args.ws_ping,
        deflate: args.ws_deflate,
        matching,
    })))
}

/// `--data`'s bytes: as given, or a file's (`@FILE`).
fn data_bytes(given: &str) -> Result<Vec<u8>, ConfigError> {
    let Some(path) = given.strip_prefix('@') else {
        return Ok(given.as_bytes().to_vec());
    };
    std::fs::read(path).map_err(|e| ConfigError::DataFile {
        given: given.to_string(),
        path: path.to_string(),
        why: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
            _ => e.to_string(),
        },
    })
}

/// `--grpc`: the method called, from the schema given; the flags that
/// only apply to calls are refused without one (`--data` is a
/// WebSocket run's message too).
fn call(args: &BenchArgs, websocket: bool) -> Result<Option<Method>, ConfigError> {
    let Some(name) = &args.grpc else {
        let flag = if !args.proto.is_empty() {
            "--proto"
        } else if !args.import_path.is_empty() {
            "--import-path"
        } else if args.protoset.is_some() {
            "--protoset"
        } else if args.data.is_some() && !websocket {
            "--data"
        } else if args.grpc_check.is_some() {
            "--grpc-check"
        } else {
            return Ok(None);
        };
        if flag == "--data" {
            return Err(ConfigError::DataNeedsGrpcOrWebSocket);
        }
        return Err(ConfigError::GrpcOnly(flag));
    };
    if args.http3 {
        return Err(ConfigError::GrpcOverHttp3);
    }
    let schema = match &args.protoset {
        Some(_) if !args.import_path.is_empty() => return Err(ConfigError::ImportPathUnused),
        Some(set) => Schema::from_protoset(set)?,
        None if args.proto.is_empty() => return Err(ConfigError::GrpcNoSchema(name.clone())),
        None => Schema::from_protos(&args.proto, &args.import_path)?,
    };
    Ok(Some(schema.method(name)?))
}

/// The fields every call carries, unless `-H` gave them: gRPC's content
/// type, `te: trailers` (which the protocol requires, to tell a gRPC
/// client from a proxy that drops trailers), and the deadline, which is
/// `--timeout`.
fn add_call_headers(headers: &mut Vec<(String, String)>, timeout: Duration) {
    let fields = [
        ("content-type", "application/grpc".to_string()),
        ("te", "trailers".to_string()),
        (
            "grpc-timeout",
            metron_grpc::timeout_value(timeout.as_millis()),
        ),
    ];
    for (name, value) in fields {
        if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(name)) {
            headers.push((name.to_string(), value));
        }
    }
}

/// `--alpn h2,http/1.1`: known names, each once, at least one.
fn alpn_list(list: &str) -> Result<Vec<Protocol>, ConfigError> {
    let bad = |why: String| ConfigError::Alpn {
        list: list.to_string(),
        why,
    };
    let mut offer = Vec::new();
    for name in list.split(',').map(str::trim) {
        let p = Protocol::from_alpn(name.as_bytes())
            .ok_or_else(|| bad(format!("{name:?} is not a protocol metron speaks")))?;
        if p == Protocol::Http3 {
            return Err(bad(
                "h3 runs over QUIC, not over TLS on TCP (use --http3 for it)".to_string(),
            ));
        }
        if offer.contains(&p) {
            return Err(bad(format!("{name} is listed twice")));
        }
        offer.push(p);
    }
    Ok(offer)
}

/// `--resolve`, each read.
fn pins(given: &[String]) -> Result<Vec<Pin>, ConfigError> {
    given
        .iter()
        .map(|g| {
            Pin::parse(g).map_err(|why| ConfigError::Resolve {
                given: g.clone(),
                why,
            })
        })
        .collect()
}

/// Refuses a `--resolve` that pins no host of the run: a typo in it would
/// otherwise send the load where DNS says, silently.
fn check_pins_used(given: &[String], pins: &[Pin], hosts: &[Target]) -> Result<(), ConfigError> {
    let Some((g, pin)) = given
        .iter()
        .zip(pins)
        .find(|(_, pin)| !hosts.iter().any(|t| pin.is_for(t)))
    else {
        return Ok(());
    };
    let mut names: Vec<String> = hosts
        .iter()
        .map(|t| format!("{}:{}", t.host, t.port))
        .collect();
    if names.len() > 3 {
        let more = names.len() - 3;
        names.truncate(3);
        names.push(format!("{more} more"));
    }
    Err(ConfigError::ResolveUnused {
        given: g.clone(),
        host: pin.host.clone(),
        port: pin.port,
        hosts: names.join(", "),
    })
}

/// `--llm`'s settings, and where its prompts come from; refuses its flags
/// without it, and the flags that would do nothing with it.
fn llm(args: &BenchArgs, target: &Target) -> Result<Option<(Llm, Source)>, ConfigError> {
    let Some(choice) = args.llm else {
        let given = [
            (args.model.is_some(), "--model"),
            (args.max_tokens.is_some(), "--max-tokens"),
            (args.ignore_eos, "--ignore-eos"),
            (args.llm_body.is_some(), "--llm-body"),
            (args.no_usage, "--no-usage"),
            (args.prompts.is_some(), "--prompts"),
            (args.prompt_words.is_some(), "--prompt-words"),
            (args.goodput.is_some(), "--goodput"),
        ];
        return match given.iter().find(|(on, _)| *on) {
            Some(&(_, flag)) => Err(ConfigError::NeedsLlm { flag }),
            None => Ok(None),
        };
    };
    let built = "--llm builds every request from its prompts";
    let refused = [
        (
            args.sse,
            "--sse",
            "--llm reads every answer as a completion stream already",
        ),
        (args.requests.is_some(), "--requests", built),
        (
            args.script.is_some(),
            "-s",
            "a script cannot shape --llm's requests yet",
        ),
        (
            args.grpc.is_some(),
            "--grpc",
            "a completion is an HTTP request, not a gRPC call",
        ),
        (args.data.is_some(), "--data", built),
        (
            args.by_endpoint,
            "--by-endpoint",
            "every request goes to one endpoint",
        ),
    ];
    if let Some(&(_, flag, why)) = refused.iter().find(|(on, ..)| *on) {
        return Err(ConfigError::LlmWith { flag, why });
    }
    if let Some(field) = ["stream", "stream_options"]
        .into_iter()
        .find(|f| args.llm_body.as_ref().is_some_and(|b| b.contains_key(*f)))
    {
        return Err(ConfigError::LlmWith {
            flag: "--llm-body",
            why: match field {
                "stream" => "\"stream\" is always true, since the answers are read as streams",
                _ => "\"stream_options\" is metron's to set (--no-usage leaves it out)",
            },
        });
    }
    let body_has = |f: &str| args.llm_body.as_ref().is_some_and(|b| b.contains_key(f));
    let clashes = [
        ("model", "--model", args.model.is_some()),
        ("max_tokens", "--max-tokens", args.max_tokens.is_some()),
    ];
    if let Some(&(field, flag, _)) = clashes.iter().find(|(f, _, given)| *given && body_has(f)) {
        return Err(ConfigError::LlmBodyClash { field, flag });
    }
    if body_has("prompt") || body_has("messages") {
        return Err(ConfigError::LlmValue(
            "--llm-body would replace every prompt: prompts come from --prompts FILE or \
             --prompt-words N; drop \"prompt\" and \"messages\" from --llm-body",
        ));
    }
    if args.max_tokens == Some(0) {
        return Err(ConfigError::LlmValue(
            "--max-tokens 0 asks for answers without a token; give 1 or more",
        ));
    }
    if args.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(ConfigError::LlmValue(
            "--model is empty; give the served model's name (GET /v1/models lists them)",
        ));
    }
    let (api, path) = Api::choose(choice, &target.path);
    let source = match (&args.prompts, args.prompt_words) {
        (Some(file), _) => Source::File(file.clone()),
        (None, words) => {
            let (words, spread) = words.unwrap_or((DEFAULT_PROMPT_WORDS, 0));
            Source::Words {
                words,
                spread,
                seed: args.seed.unwrap_or_else(clock_seed),
            }
        }
    };
    let options = BodyOptions {
        model: args.model.clone(),
        max_tokens: args.max_tokens,
        ignore_eos: args.ignore_eos,
        usage: !args.no_usage,
        extra: args.llm_body.clone().unwrap_or_default(),
    };
    let llm = Llm {
        api,
        path,
        source: source.label(),
        goodput: args.goodput.unwrap_or_default(),
        options,
    };
    Ok(Some((llm, source)))
}

/// `--llm`'s requests: one per prompt, replayed in order or at random.
fn llm_requests(
    args: &BenchArgs,
    (llm, source): &(Llm, Source),
    target: &Target,
    headers: &[(String, String)],
    pins: &[Pin],
) -> Result<Replay, ConfigError> {
    let set = crate::llm::requests(
        llm.api,
        &llm.path,
        source,
        &llm.options,
        target,
        headers,
        pins,
    )?;
    let order = args.requests_order.unwrap_or(Order::Sequential);
    // Made-up prompts and a random order draw from one seed, shown once.
    let seed = match source {
        Source::Words { seed, .. } => *seed,
        Source::File(_) => args.seed.unwrap_or_else(clock_seed),
    };
    Ok(Replay {
        file: std::path::PathBuf::from(&llm.source),
        set: Arc::new(set),
        order,
        seed,
        by_endpoint: false,
    })
}

/// Loads `--requests` and checks that every thread can reach every host.
fn replay(
    args: &BenchArgs,
    target: &Target,
    headers: &[(String, String)],
    pins: &[Pin],
    conns_per_thread: &[usize],
    call: Option<&Method>,
) -> Result<Option<Replay>, ConfigError> {
    let poisson = args.arrival == Some(Arrival::Poisson);
    let Some(path) = &args.requests else {
        let flag = if args.by_endpoint {
            "--by-endpoint"
        } else if args.seed.is_some() && !poisson {
            return Err(ConfigError::SeedUnused);
        } else if args.requests_order.is_some() {
            "--requests-order"
        } else {
            return Ok(None);
        };
        return Err(ConfigError::NeedsRequests { flag });
    };
    let order = args.requests_order.unwrap_or(Order::Sequential);
    if args.seed.is_some() && order != Order::Random && !poisson {
        return Err(ConfigError::SeedUnused);
    }
    let set = RequestSet::load(path, target, headers, pins, call)?;
    let hosts = set.hosts().len();
    let fewest = conns_per_thread.iter().copied().min().unwrap_or(0);
    if fewest < hosts {
        let threads = conns_per_thread.len();
        return Err(ConfigError::HostConnections {
            hosts,
            threads,
            needed: hosts * threads,
        });
    }
    let too_many = set.too_many_endpoints();
    if args.by_endpoint && too_many {
        return Err(ConfigError::Endpoints);
    }
    let by_endpoint = args.by_endpoint || (!too_many && set.endpoints().len() >= 2);
    let seed = args.seed.unwrap_or_else(clock_seed);
    Ok(Some(Replay {
        file: path.clone(),
        set: Arc::new(set),
        order,
        seed,
        by_endpoint,
    }))
}

/// Derives [`TlsOptions`]: refuses TLS flags that would do nothing, then
/// reads and checks their files.
fn tls_options(args: &BenchArgs, hosts: &[Target]) -> Result<TlsOptions, ConfigError> {
    match (&args.cert, &args.key) {
        (Some(_), None) => {
            let needs = "--key FILE, the private key of the certificate";
            return Err(ConfigError::TlsPair {
                flag: "--cert",
                needs,
            });
        }
        (None, Some(_)) => {
            let needs = "--cert FILE, the certificate the key belongs to";
            return Err(ConfigError::TlsPair {
                flag: "--key",
                needs,
            });
        }
        _ => {}
    }
    if !hosts.iter().any(|t| t.scheme == Scheme::Https) {
        let set = [
            (args.insecure, "-k"),
            (args.cacert.is_some(), "--cacert"),
            (args.cert.is_some(), "--cert"),
        ];
        if let Some(&(_, flag)) = set.iter().find(|(on, _)| *on) {
            let tls = if hosts.iter().any(|t| t.websocket) {
                "wss"
            } else {
                "https"
            };
            return Err(ConfigError::TlsUnused { flag, tls });
        }
    }
    let trust = match (&args.cacert, args.insecure) {
        (Some(file), true) => return Err(ConfigError::CacertInsecure(file.display().to_string())),
        (Some(file), false) => {
            let (roots, certs) = pem::authorities_as_given("--cacert", file)?;
            Trust::Authorities {
                file: file.clone(),
                roots: Arc::new(roots),
                certs: certs.into(),
            }
        }
        (None, true) => Trust::Insecure,
        (None, false) => Trust::System,
    };
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Some(Identity {
            cert: cert.clone(),
            key: pem::certified_key(("--cert", cert), ("--key", key))?,
        }),
        _ => None,
    };
    Ok(TlsOptions { trust, identity })
}

fn max_head(bytes: u64) -> Result<usize, ConfigError> {
    if (1024..=1 << 30).contains(&bytes) {
        Ok(bytes as usize)
    } else {
        Err(ConfigError::MaxHead(bytes))
    }
}

/// `--interval` when not given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// `--timeseries-interval` when not given.
pub const DEFAULT_SERIES_INTERVAL: Duration = Duration::from_millis(250);

/// `--interval`: the recorded intervals' length. Given without a file
/// that has intervals, it would change nothing, so it is refused.
fn interval(given: Option<Duration>, outputs: &Outputs) -> Result<Duration, ConfigError> {
    let Some(interval) = given else {
        return Ok(DEFAULT_INTERVAL);
    };
    if interval < Duration::from_millis(10) {
        return Err(ConfigError::Interval(interval));
    }
    if !outputs.sinks.any() {
        return Err(ConfigError::IntervalUnused);
    }
    Ok(interval)
}

/// `--timeseries-interval`: a whole number of the threads' 10 ms steps,
/// refused when neither output that uses it is asked for.
fn series_interval(args: &BenchArgs) -> Result<Duration, ConfigError> {
    let Some(ts) = args.timeseries_interval else {
        return Ok(DEFAULT_SERIES_INTERVAL);
    };
    let step = crate::stats::SERIES_STEP.as_nanos();
    if ts.is_zero() || ts.as_nanos() % step != 0 {
        return Err(ConfigError::SeriesInterval(ts));
    }
    if !args.timeseries && !args.thread_timeseries {
        return Err(ConfigError::SeriesIntervalUnused);
    }
    Ok(ts)
}

fn outputs(args: &BenchArgs) -> Result<Outputs, ConfigError> {
    let ts = series_interval(args)?;
    if args.sinks.dashboard_linger.is_some() && args.sinks.dashboard.is_none() {
        return Err(ConfigError::LingerWithoutDashboard);
    }
    Ok(Outputs {
        sinks: args.sinks.clone(),
        histogram: args.histogram,
        timeseries: args.timeseries,
        thread_timeseries: args.thread_timeseries,
        timeseries_interval: ts,
        quiet: args.quiet,
    })
}

/// How far the connections may grow on demand: to `--max-connections`,
/// or with `-c auto` to what the open-files limit allows. Rate mode only:
/// a closed loop has no request that waits for a connection.
fn growth(args: &BenchArgs, connections: u64, load: &Load) -> Result<Option<Growth>, ConfigError> {
    let auto = args.connections == Connections::Auto;
    let flag = match (args.max_connections, auto) {
        (None, false) => return Ok(None),
        (Some(_), _) => "--max-connections",
        (None, true) => "-c auto",
    };
    if !load.is_open() {
        return Err(ConfigError::GrowthWithoutRate(flag));
    }
    match args.max_connections {
        Some(max) if max < connections => {
            Err(ConfigError::MaxBelowConnections { max, connections })
        }
        Some(max) => Ok(Some(Growth {
            max: max as usize,
            from_open_files: false,
        })),
        None => Ok(Some(Growth {
            max: crate::engine::limits::connections_allowed(args.threads as usize),
            from_open_files: true,
        })),
    }
}

/// `"Name: value"` or `"Name:value"` (wrk silently drops the latter). The
/// name must be a token and the value free of control characters: a line
/// break in it would put a header of its own on the wire.
pub fn parse_header(h: &str) -> Result<(String, String), ConfigError> {
    let Some((name, value)) = h.split_once(':') else {
        return Err(ConfigError::Header(h.to_string()));
    };
    let value = value.trim_matches([' ', '\t']);
    let bad = |why: String| ConfigError::BadHeader {
        header: h.escape_debug().to_string(),
        why,
    };
    if name.is_empty() {
        return Err(bad("its name is empty".to_string()));
    }
    check_token(name).map_err(|why| bad(format!("its name {why}")))?;
    check_header_value(value).map_err(bad)?;
    Ok((name.to_string(), value.to_string()))
}

/// CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

fn check_affinity(cpus: &[usize]) -> Result<Vec<usize>, ConfigError> {
    let allowed = allowed_cpus();
    let list = |v: &[usize]| {
        v.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match cpus.iter().find(|c| !allowed.contains(c)) {
        Some(&cpu) => Err(ConfigError::Affinity {
            cpus: list(cpus),
            cpu,
            available: list(&allowed),
        }),
        None => Ok(cpus.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{parse, Command};

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["metron"];
        v.extend_from_slice(args);
        match parse(v).map_err(|e| e.to_string())? {
            Command::Bench(b) => Config::from_args(&b).map_err(|e| e.to_string()),
            _ => unreachable!(),
        }
    }

    #[test]
    fn connections_remainder_is_spread_not_dropped() {
        assert_eq!(spread(10, 3), vec![4, 3, 3]);
        assert_eq!(spread(2, 2), vec![1, 1]);
        let c = config(&["-t3", "-c10", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!(c.run.connections(), 10);
    }

    /// What --llm-body would set behind a flag's back, and values that
    /// ask for nothing, are refused in one line that names the fix.
    #[test]
    fn llm_body_fields_a_flag_sets_and_empty_asks_are_refused() {
        let u = "http://127.0.0.1:1/";
        for (args, want) in [
            (
                &["--llm-body", r#"{"model":"x"}"#, "--model", "y"][..],
                "--llm-body's \"model\" and --model both set it; keep one",
            ),
            (
                &["--llm-body", r#"{"max_tokens":3}"#, "--max-tokens", "5"],
                "--llm-body's \"max_tokens\" and --max-tokens both set it",
            ),
            (
                &["--llm-body", r#"{"messages":[]}"#],
                "would replace every prompt",
            ),
            (
                &["--max-tokens", "0"],
                "--max-tokens 0 asks for answers without a token",
            ),
            (&["--model", " "], "--model is empty"),
        ] {
            let e = config(&[&["--llm", "-d1s"][..], args, &[u]].concat()).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        // Without the flag, the body may name the model.
        let c = config(&["--llm", "-d1s", "--llm-body", r#"{"model":"x"}"#, u]);
        assert!(c.is_ok(), "{c:?}");
    }

    #[test]
    fn headers_with_or_without_a_space() {
        assert_eq!(parse_header("A: b").unwrap(), ("A".into(), "b".into()));
        assert_eq!(parse_header("A:b").unwrap(), ("A".into(), "b".into()));
        assert_eq!(
            parse_header("Auth: Bearer x:y").unwrap(),
            ("Auth".into(), "Bearer x:y".into())
        );
        assert!(parse_header("nocolon").is_err());
        assert!(parse_header(": v").is_err());
    }

    /// Regression: a line break in a -H value went on the wire and made a
    /// header of its own; other control characters failed mid-run.
    #[test]
    fn headers_that_would_break_the_request_are_refused() {
        let err = |h: &str| parse_header(h).unwrap_err().to_string();
        assert_eq!(
            err("X: a\r\nEvil: 1"),
            "-H 'X: a\\r\\nEvil: 1': its value has '\\r': no line breaks or other control \
             characters; write it as 'Name: value'"
        );
        assert!(err("X: a\u{7f}b").contains("control characters"));
        assert!(err("X Y: v").contains("its name \"X Y\" has ' '"));
        assert_eq!(
            err(": v"),
            "-H ': v': its name is empty; write it as 'Name: value'"
        );
        assert_eq!(parse_header("X:\tv\t").unwrap(), ("X".into(), "v".into()));
    }

    /// Every impossible combination gets one line naming the fix.
    #[test]
    fn bad_combinations_name_the_fix() {
        let cases: &[(&[&str], &str)] = &[
            (&["-t0", "http://127.0.0.1/"], "-t 0: at least one thread"),
            (
                &["-t4", "-c2", "http://127.0.0.1/"],
                "-c 2 is fewer than -t 4",
            ),
            (&["-d0", "http://127.0.0.1/"], "positive duration"),
            (
                &["-d", "10000000h", "http://127.0.0.1/"],
                "longer than a year",
            ),
            (&["-R0", "http://127.0.0.1/"], "rate must be above zero"),
            (
                &["-R", "1e30", "http://127.0.0.1/"],
                "-R 1e30: above 1G requests/s",
            ),
            (
                &["-d5s", "--warmup", "5s", "http://127.0.0.1/"],
                "shorten --warmup",
            ),
            (
                &["--timeout", "0", "http://127.0.0.1/"],
                "timeout must be above zero",
            ),
            (
                &["-H", "bogus", "http://127.0.0.1/"],
                "write it as 'Name: value'",
            ),
            (
                &["-a", "4096", "http://127.0.0.1/"],
                "CPU 4096 is not available",
            ),
            (&["--interval", "1ms", "http://127.0.0.1/"], "at least 10ms"),
            (&["--max-head", "10", "http://127.0.0.1/"], "--max-head 10"),
            (
                &["--timeseries-interval", "15ms", "http://127.0.0.1/"],
                "multiple of 10ms",
            ),
            (
                &["--timeseries-interval", "1s", "http://127.0.0.1/"],
                "--timeseries-interval only sets the interval of --timeseries and --thread-timeseries, and neither is given; add one of them",
            ),
            (
                &["--interval", "2s", "--histogram", "http://127.0.0.1/"],
                "--interval only sets the intervals of --json, --html, --hlog, --csv and --dashboard, and none is given; add one of them",
            ),
            (
                &["http://127.0.0.1/", "requests.json"],
                "\"requests.json\" after the URL would go to a script's init(args), but there is no script; add -s FILE",
            ),
            (
                &["http://127.0.0.1/", "--", "a"],
                "\"a\" after the URL would go to a script",
            ),
            (
                &["--model", "m", "http://127.0.0.1/"],
                "--model shapes --llm's requests; add --llm (or drop --model)",
            ),
            (
                &["--goodput", "ttft<1s", "http://127.0.0.1/"],
                "--goodput shapes --llm's requests; add --llm",
            ),
            (
                &["--llm", "--sse", "http://127.0.0.1/"],
                "--sse with --llm: --llm reads every answer as a completion stream already; drop --sse",
            ),
            (
                &["--llm", "--slo", "goodput>=90%", "http://127.0.0.1/"],
                "none were given, so the term could never be met; add --goodput",
            ),
            (
                &["--slo", "ttft_p99<1s", "http://127.0.0.1/"],
                "token terms judge the answers of --llm",
            ),
            (&["ftp://127.0.0.1/"], "unsupported scheme 'ftp'"),
            (
                &["--cert", "c.pem", "https://127.0.0.1/"],
                "--cert needs --key FILE",
            ),
            (
                &["--requests-order", "sequential", "http://127.0.0.1/"],
                "--requests-order needs --requests FILE",
            ),
            (
                &["-k", "http://127.0.0.1/"],
                "-k only applies to https:// hosts",
            ),
            (
                &["--cacert", "no-such-ca.pem", "https://127.0.0.1/"],
                "--cacert no-such-ca.pem: cannot read it",
            ),
            (&["127.0.0.1:80"], "invalid URL '127.0.0.1:80': no scheme"),
            (&["not a url"], "invalid URL 'not a url'"),
            (
                &["http://no-such-host.invalid/"],
                "cannot resolve host 'no-such-host.invalid'",
            ),
            (
                &["--resolve", "app.test:443", "https://app.test/"],
                "--resolve \"app.test:443\": it has no ADDR; write it as HOST:PORT:ADDR",
            ),
            (
                &["--resolve", "app.test:443:app.local", "https://app.test/"],
                "--resolve \"app.test:443:app.local\": ADDR \"app.local\" is not an IP address",
            ),
            (
                &["--resolve", "localhost:8443:127.0.0.1", "https://localhost/"],
                "--resolve pins localhost on port 8443, not on the URL's port 443; write --resolve localhost:443:127.0.0.1, or correct the URL's port",
            ),
            (
                &["--resolve", "elsewhere.test:443:127.0.0.1", "https://localhost/"],
                "--resolve \"elsewhere.test:443:127.0.0.1\" pins elsewhere.test:443, which no host of this run is (localhost:443); give a host and port of the URL, or drop it",
            ),
        ];
        for (args, want) in cases {
            let err = config(args).expect_err(&format!("{args:?} should fail"));
            assert!(err.contains(want), "{args:?}: got '{err}', want '{want}'");
            assert!(!err.contains('\n'), "{args:?}: message spans lines: {err}");
        }
    }

    /// Each interval flag is taken with any output that uses it, and
    /// defaults when not given.
    #[test]
    fn interval_flags_go_with_their_outputs() {
        let c = config(&["http://127.0.0.1/"]).unwrap();
        assert_eq!(c.run.interval, DEFAULT_INTERVAL);
        assert_eq!(c.outputs.timeseries_interval, DEFAULT_SERIES_INTERVAL);
        for output in ["--json", "--html", "--hlog", "--csv"] {
            let c = config(&["--interval", "2s", output, "r", "http://127.0.0.1/"]).unwrap();
            assert_eq!(c.run.interval, Duration::from_secs(2), "{output}");
        }
        for output in ["--timeseries", "--thread-timeseries"] {
            let c = config(&["--timeseries-interval", "1s", output, "http://127.0.0.1/"]).unwrap();
            assert_eq!(
                c.outputs.timeseries_interval,
                Duration::from_secs(1),
                "{output}"
            );
        }
    }

    /// `--resolve` connects to its address while the name stays the URL's.
    #[test]
    fn resolve_pins_the_address_not_the_name() {
        let c = config(&[
            "--resolve",
            "app.test:8443:127.0.0.1",
            "https://app.test:8443/",
        ])
        .unwrap();
        let t = &c.run.target;
        assert_eq!(t.addrs, vec!["127.0.0.1:8443".parse().unwrap()]);
        assert_eq!(
            (t.host.as_str(), t.authority.as_str()),
            ("app.test", "app.test:8443")
        );
        let c = config(&[
            "--resolve",
            "localhost:80:127.0.0.2",
            "--resolve",
            "app.test:443:[::1],127.0.0.1",
            "https://app.test/",
        ]);
        assert!(c.unwrap_err().contains("pins localhost:80, which no host"));
    }

    /// SLO terms the run cannot measure are refused before it, as a rate
    /// term without a rate is: events without `--sse` or a streamed call,
    /// a TLS handshake over HTTP/3 or without an https:// host.
    #[test]
    fn slo_terms_that_could_never_be_met_are_refused() {
        let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/grpc/greet.proto");
        let grpc = |method: &'static str| {
            [
                "--grpc",
                method,
                "--proto",
                proto,
                "--slo",
                "first_event_p99<1s",
            ]
        };
        let refused: [(&[&str], &str); 5] = [
            (
                &["--slo", "p99<1s,first_event_p99<1s", "http://127.0.0.1/"],
                "--slo first_event_p99<1s: events are read only with --sse (or from a \
                 server-streaming --grpc method, or a ws:// URL's --ws push), so the term could \
                 never be met; add --sse, or drop that term",
            ),
            (
                &["--slo", "gap_max<1s", "http://127.0.0.1/"],
                "--slo gap_max<1s: events are read only with --sse",
            ),
            (
                &[&grpc("greet.Greeter/SayHello")[..], &["http://127.0.0.1/"]].concat(),
                "--slo first_event_p99<1s: the method of --grpc is unary: its replies have no \
                 messages to time, so the term could never be met; call a server-streaming \
                 method, or drop that term",
            ),
            (
                &["--http3", "--slo", "tls_p99<5ms", "https://127.0.0.1/"],
                "--slo tls_p99<5ms: HTTP/3 has no TLS handshake of its own: TLS runs inside \
                 QUIC's handshake, which connect_ times, so the term could never be met; bound \
                 connect_ instead (connect_p99<...), or drop that term",
            ),
            (
                &["--slo", "tls_p99<5ms", "http://127.0.0.1/"],
                "--slo tls_p99<5ms: this run has no https:// host, and no TLS handshake to time, \
                 so the term could never be met; load an https:// URL, or drop that term",
            ),
        ];
        for (args, want) in refused {
            let err = config(args).unwrap_err();
            assert!(err.starts_with(want), "{args:?}: {err}");
        }
        for args in [
            &[
                "--sse",
                "--slo",
                "first_event_p99<1s,gap_p99<1s",
                "http://127.0.0.1/",
            ][..],
            &[&grpc("greet.Greeter/Countdown")[..], &["http://127.0.0.1/"]].concat(),
            &["--slo", "tls_p99<5ms,connect_p99<1ms", "https://127.0.0.1/"],
            &["--http3", "--slo", "connect_p99<5ms", "https://127.0.0.1/"],
        ] {
            assert!(config(args).is_ok(), "{args:?}: {:?}", config(args).err());
        }
    }

    #[test]
    fn u_latency_implies_latency() {
        let c = config(&["-U", "http://127.0.0.1/"]).unwrap();
        assert!(c.latency && c.u_latency);
    }
}
