//! Stage one of a run: everything before the start. Limits are checked,
//! the script is loaded into every state, each server is reached once (so
//! an unreachable one is one clear error, not a screen of counted
//! failures), and every worker thread is spawned and connected.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};

use super::preflight::peers;
use super::progress::Board;
use super::setup::Setup;
use super::share::{Peer, WorkerSetup};
use super::worker::{Window, Worker};
use super::{limits, Ends, EngineError, Host, Prepared, Spawned, Stop, Watch, WorkerResult};
use crate::clock::nanos;
use crate::http::Spoken;
use crate::http::{Batch, Parts};
use crate::replay::Cursor;
use crate::schedule::Plan;
use crate::script::{MainScript, ScriptTarget, ThreadScript};
use crate::stats::Phases;
use crate::target::Scheme;

/// Prepares the run `setup` describes, up to the start: every worker is
/// connected and waits for [`Prepared::start`]. With a `watch`, workers
/// publish running totals (and the per-interval rows it asks for) for the
/// main thread to show. A worker that cannot set up fails the whole run,
/// before any request.
pub fn prepare(
    setup: &Setup,
    stop: &Arc<Stop>,
    watch: Option<&dyn Watch>,
) -> Result<Prepared, EngineError> {
    // Room for every connection the run may open, grown ones included.
    let connections = setup.max_connections();
    if let Ok(Some((needed, limit))) = limits::open_files_short(connections, setup.threads) {
        let grown = setup.growth.is_some_and(|g| g.max > setup.connections());
        return Err(EngineError::OpenFiles {
            flag: if grown { "--max-connections" } else { "-c" },
            connections,
            needed,
            limit,
        });
    }
    // Scripts first: a broken script is reported without touching the network.
    let first = setup.target.addrs[0];
    let (script, scripts) = load_scripts(setup, first)?;
    check_flow(setup, script.as_ref())?;
    let peers = peers(setup)?;
    check_local_ports(setup, &peers)?;
    // Workers hand their closed intervals to a watched run's main thread,
    // which keeps them (see `Running::collect`).
    let board = watch.map(|w| {
        Arc::new(Board::new(setup.threads, w.rows_every()).with_intervals(Some(setup.interval)))
    });
    let setups = worker_setups(setup, scripts, &peers, first, board.as_ref())?;
    stop.begin();
    let (workers, done) = spawn(setups, stop)?;
    let endpoints = setup
        .replay
        .as_ref()
        .filter(|r| r.by_endpoint)
        .map(|r| r.set.clone());
    let max_streams = setup.protocols.max_streams;
    let steps = script
        .as_ref()
        .filter(|m| m.has_flow())
        .map(|m| Arc::clone(m.steps()));
    Ok(Prepared {
        script,
        hosts: peers.iter().map(|p| Host::of(p, max_streams)).collect(),
        workers,
        load: setup.load.clone(),
        warmup: setup.warmup,
        duration: setup.duration,
        start_at: setup.start_at,
        interval: setup.interval,
        ends: Ends {
            done,
            board,
            stop: stop.clone(),
            addr: peers[0].addr,
            protocol: Spoken::of(peers.iter().map(|p| p.protocol)),
            endpoints,
            steps,
        },
    })
}

/// What each worker thread starts from: its connections, peers, request
/// bytes, script state and place in the requests file.
fn worker_setups(
    setup: &Setup,
    scripts: Vec<ThreadScript>,
    peers: &[Peer],
    first: SocketAddr,
    board: Option<&Arc<Board>>,
) -> Result<Vec<WorkerSetup>, EngineError> {
    let (method, path, body) = setup.request();
    let default_request = Parts {
        method,
        path: &path,
        headers: &setup.headers,
        body,
    };
    let default_request = Batch::encode(&default_request, &setup.target.authority)
        .map_err(EngineError::BadStaticRequest)?;
    let endpoints = setup
        .replay
        .as_ref()
        .filter(|r| r.by_endpoint)
        .map_or(0, |r| r.set.endpoints().len());
    let mut scripts = scripts.into_iter();
    let mut setups = Vec::with_capacity(setup.threads);
    let max_per_thread = super::setup::spread(setup.max_connections(), setup.threads);
    for j in 0..setup.threads {
        let mut script = scripts.next();
        let request = match script.as_mut() {
            // A script without request() still shapes the one static request.
            Some(s) if s.is_static() => {
                Batch::parse(s.static_request()?).map_err(EngineError::BadStaticRequest)?
            }
            Some(_) => Batch::default(),
            None => default_request.clone(),
        };
        let mut peers = peers.to_vec();
        // setup() may have moved this thread to another address.
        if let Some(moved) = script.as_ref().map(ThreadScript::addr) {
            if moved != first {
                peers[0].addr = moved;
            }
        }
        setups.push(WorkerSetup {
            index: j,
            connections: setup.conns_per_thread[j],
            max_connections: max_per_thread[j],
            peers,
            request,
            script,
            replay: setup.replay.as_ref().map(|r| {
                // In step with the schedule: lane j of this instance's
                // threads is a lane of the whole run (see `Shard`).
                let (lane, lanes) = setup.load.shard().lane(j, setup.threads);
                Cursor::new(r.set.clone(), r.order, r.seed, lane, lanes)
            }),
            endpoints,
            lane: setup.load.shard().lane(j, setup.threads),
            timeout: nanos(setup.timeout),
            visit_timeout: setup.visit_timeout.map(nanos),
            max_head: setup.max_head,
            sse: setup.sse,
            websocket: setup.websocket.as_ref().map(|c| c.shape),
            llm: setup.llm.as_ref().map(|l| l.goodput),
            calls: setup.calls.as_ref().map(|c| c.streaming),
            check: setup.calls.as_ref().and_then(|c| c.check.clone()),
            cpu: setup.affinity.as_ref().map(|cpus| cpus[j % cpus.len()]),
            connect_wait: nanos(setup.timeout),
            interval: setup.interval,
            counts_every: setup.counts_every,
            max_streams: setup.protocols.max_streams,
            offered_by: setup.protocols.asked_by.clone(),
            progress: board.cloned(),
        });
    }
    Ok(setups)
}

/// Spawns one thread per worker and waits until every one is connected
/// (or has failed, which fails the run: the others are then let go and
/// joined). Each thread holds a sender of the returned channel, which
/// closes once all of them have exited.
fn spawn(
    setups: Vec<WorkerSetup>,
    stop: &Arc<Stop>,
) -> Result<(Vec<Spawned>, mpsc::Receiver<()>), EngineError> {
    let threads = setups.len();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut workers = Vec::with_capacity(threads);
    for setup in setups {
        let j = setup.index;
        let (start_tx, start_rx) = mpsc::channel::<Option<(Plan, Window, Phases)>>();
        let ready = ready_tx.clone();
        let stop = stop.clone();
        let done = done_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("metron-worker-{j}"))
            .spawn(move || -> WorkerResult {
                let worker = match Worker::new(setup, stop) {
                    Ok(w) => w,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return Ok(None);
                    }
                };
                let _done = done;
                let _ = ready.send(Ok(()));
                match start_rx.recv() {
                    Ok(Some((plan, window, phases))) => worker.run(plan, window, phases).map(Some),
                    _ => Ok(None),
                }
            })
            .map_err(|why| EngineError::Worker { thread: j, why })?;
        workers.push(Spawned {
            handle,
            start: start_tx,
        });
    }
    drop(ready_tx);
    drop(done_tx);
    // The run starts only once every thread is connected.
    let mut failed = None;
    for _ in 0..threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => failed = failed.or(Some(EngineError::Panic(0))),
        }
    }
    let Some(failed) = failed else {
        return Ok((workers, done_rx));
    };
    for w in &workers {
        let _ = w.start.send(None);
    }
    let mut failed = Some(failed);
    for (j, w) in workers.into_iter().enumerate() {
        match w.handle.join() {
            Ok(Err(why)) => failed = failed.or(Some(EngineError::Worker { thread: j, why })),
            Err(_) => failed = failed.or(Some(EngineError::Panic(j))),
            Ok(Ok(_)) => {}
        }
    }
    Err(failed.expect("a failure was found"))
}

/// Whether the run's script defines `flow(visit)`, so that its rate counts
/// visits (the script is loaded, its main chunk run, to find out).
pub fn has_flow(setup: &Setup) -> Result<bool, EngineError> {
    match &setup.script {
        Some(path) => Ok(MainScript::load(path, script_target(setup))?.has_flow()),
        None => Ok(false),
    }
}

/// What a script's `wrk` table says of the target.
fn script_target(setup: &Setup) -> ScriptTarget {
    let t = &setup.target;
    let (method, request_path, body) = setup.request();
    ScriptTarget {
        scheme: match t.scheme {
            Scheme::Http => "http".into(),
            Scheme::Https => "https".into(),
        },
        host: t.host.clone(),
        port: t.port,
        method: method.into(),
        path: request_path,
        body: body.map(<[u8]>::to_vec),
        authority: t.authority.clone(),
        url: setup.url.clone(),
        headers: setup.headers.clone(),
        print_to_stderr: setup.script_output_to_stderr,
    }
}

/// Loads the script into the main state and one state per thread (each
/// after `setup()` and `init()`), all before any worker starts.
fn load_scripts(
    setup: &Setup,
    addr: SocketAddr,
) -> Result<(Option<MainScript>, Vec<ThreadScript>), EngineError> {
    let Some(path) = &setup.script else {
        return Ok((None, Vec::new()));
    };
    let mut main = MainScript::load(path, script_target(setup))?;
    let threads = (0..setup.threads)
        .map(|j| main.create_thread(j, addr, &setup.script_args))
        .collect::<Result<_, _>>()?;
    Ok((Some(main), threads))
}

/// Refuses what a flow cannot do, or a flow's flag without a flow.
fn check_flow(setup: &Setup, script: Option<&MainScript>) -> Result<(), EngineError> {
    let flow = script.is_some_and(MainScript::has_flow);
    let why = if setup.visit_timeout.is_some() && !flow {
        "--visit-timeout bounds the visits of a script's flow(visit), and this script defines none; drop --visit-timeout, or define flow(visit)"
    } else if flow && setup.calls.is_some() {
        "--grpc makes every request the same call, and a script's flow(visit) builds its own requests; drop --grpc, or drop flow()"
    } else if flow && setup.websocket.is_some() {
        "a script's flow(visit) sends HTTP requests (http.get, http.post, ...), and a ws:// or wss:// URL sends WebSocket messages; give the flow an http:// or https:// URL, or drop flow()"
    } else {
        return Ok(());
    };
    Err(EngineError::Flow(why.into()))
}

/// Refuses a run that would open more connections to one address than
/// there are local ports, instead of letting the surplus fail one by one.
fn check_local_ports(setup: &Setup, peers: &[Peer]) -> Result<(), EngineError> {
    let Some((lo, hi)) = limits::local_port_range() else {
        return Ok(());
    };
    let hosts = peers.len();
    for (h, peer) in peers.iter().enumerate() {
        // Connection c of a thread goes to peer c % hosts.
        let to_one: usize = setup
            .conns_per_thread
            .iter()
            .map(|&n| (n + hosts - 1 - h) / hosts)
            .sum();
        if let Some(available) = limits::ports_short(to_one, (lo, hi)) {
            return Err(EngineError::LocalPorts {
                connections: setup.connections(),
                to_one,
                addr: peer.addr,
                available,
                lo,
                hi,
            });
        }
    }
    Ok(())
}
