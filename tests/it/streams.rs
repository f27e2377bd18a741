//! Streams a server refuses and connections it retires, over HTTP/2 and
//! HTTP/3 alike (HTTP/1.1 has neither): a request the server never
//! processed (refused with HTTP/2's REFUSED_STREAM or HTTP/3's
//! H3_REQUEST_REJECTED, or above a GOAWAY's last stream) goes out again,
//! keeping its intended time, instead of counting as an error. Nothing is
//! lost or answered twice, and what was sent again is counted.

use std::time::Duration;

use crate::common::*;
use metron::serve::{Pick, Probability, ServeConfig};

per_protocol! {
    /// `--h2-reset P --h2-reset-code REFUSED_STREAM` (`--h3-reset P`): a
    /// stream the server refuses was never processed, so its request goes
    /// out again instead of counting as an error: nothing is lost, and each
    /// refusal is one request sent again.
    except [http1]
    fn refused_streams_go_out_again(p) {
        let _g = serial();
        let refuse = Pick::Chance {
            p: Probability::new(0.1).unwrap(),
            seed: 5,
        };
        let srv = p.stream_faults(None, Some(refuse), ServeConfig::default());
        let (o, text) = p.bench_within(&["-t1", "-c2", "-R1000", "-d2s"], &p.url(&srv, "/"));
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert!(!c.errors.any_socket(), "{p:?}: {c:?}\n{text}");
        assert_eq!(c.errors.lost_requests(), 0, "{p:?}: {c:?}\n{text}");
        assert_eq!(c.http2.resets.total(), 0, "{p:?}: {c:?}");
        // About one in ten refused, each sent again (one refused at the very
        // end may still be on its way).
        let refused = p.server_resets(&srv.stats());
        assert!((100..=400).contains(&refused), "{p:?}: {refused} refused: {c:?}");
        assert!(
            c.http2.retried <= refused && refused <= c.http2.retried + c.in_flight,
            "{p:?}: {refused} refused, {c:?}"
        );
        assert!(c.completed + c.in_flight + c.never_sent == c.due, "{p:?}: {c:?}");
        assert!(text.contains("sent again"), "{text}");
    }
}

per_protocol! {
    /// `--h2-goaway-after 20` (`--h3-goaway-after 20`): each connection goes
    /// away after its 20th stream (a graceful GOAWAY naming the 20th as the
    /// last processed). Requests the client had sent on it above that were
    /// never processed: they go out again on another connection, keeping
    /// their intended time. No request is lost or answered twice, and the
    /// GOAWAYs and the requests sent again are counted.
    except [http1]
    fn goaway_after_n_streams_loses_no_request(p) {
        let _g = serial();
        // The closed loop opens 30 streams on each new connection at once, so
        // 10 of them are above the GOAWAY; rate mode sends 300 a second on
        // each connection, a stream or two at a time. Each mode has a server
        // of its own: what one mode left in flight at its end is answered
        // after it, and must not be counted in the next.
        for (mode, streams) in [(&["-m30", "-d1s"][..], 2 * 30), (&["-R600", "-d2s"], 0)] {
            let cfg = ServeConfig {
                delay: Duration::from_millis(5),
                ..ServeConfig::default()
            };
            let srv = p.stream_faults(Some(20), None, cfg);
            let args = [&["-t1", "-c2"][..], mode].concat();
            let (o, text) = p.bench_within(&args, &p.url(&srv, "/"));
            assert_balanced(&o);
            let c = &o.stats.counters;
            assert!(!c.errors.any_socket(), "{p:?} {mode:?}: {c:?}");
            assert_eq!(c.errors.lost_requests(), 0, "{p:?} {mode:?}: {c:?}\n{text}");
            // Requests still waiting to go out again at the end were never
            // sent (again); in the closed loop at most 10 per connection open
            // or still draining then.
            assert!(
                c.never_sent <= (2 + c.at_end.draining) * 10,
                "{p:?} {mode:?}: {c:?}"
            );
            assert!(c.completed > 100, "{p:?} {mode:?}: {c:?}");
            if streams == 0 {
                assert_eq!(c.due, 1200, "{p:?}: {c:?}");
            }
            let h = &c.http2;
            // GOAWAY frames, all of the graceful kind. The HTTP/2 server
            // retires a connection after 20 streams with two of them, as a
            // graceful shutdown does (RFC 9113 section 6.8): the first says
            // no new streams, the second, a round trip later, names the last
            // one processed. The client counts connections retired, by the
            // first (the last may still be on its way at the end).
            let goaways = h.goaway.get(p.goaway_no_error());
            assert_eq!(goaways, h.goaway.total(), "{p:?} {mode:?}: {h:?}");
            let retired = p.server_goaways(&srv.stats());
            assert!(retired > 0, "{p:?} {mode:?}: {c:?}");
            assert!(
                goaways <= retired && retired <= goaways + 2,
                "{p:?} {mode:?}: {goaways} GOAWAYs, {retired} connections retired"
            );
            // Each retired connection processed exactly 20 streams, each
            // completed or still in flight at the end (a retired connection
            // is replaced at once and finishes on the side, so several may
            // be finishing then); the two open ones processed fewer.
            assert!(
                20 * retired <= c.completed + c.in_flight && c.completed <= 20 * (retired + 2),
                "{p:?} {mode:?}: {retired} connections retired for {} completed, {} in flight",
                c.completed,
                c.in_flight
            );
            assert_eq!(
                (h.resets.total(), h.connection_errors),
                (0, 0),
                "{p:?} {mode:?}: {h:?}"
            );
            // In the closed loop each retirement leaves 10 requests to send
            // again, once the server's (second) GOAWAY names the last stream
            // it processed. A connection whose last GOAWAY had not come by
            // the end (each open one, and each retired one still draining: a
            // replacement may itself be retired before its predecessor's
            // second GOAWAY arrives) holds its 10 in flight instead.
            if streams > 0 {
                let waiting = 2 + c.at_end.draining;
                assert!(
                    h.retried + waiting * 10 >= 10 * retired && h.retried <= 10 * retired,
                    "{p:?} {mode:?}: {} sent again, {retired} connections retired, \
                     {} draining at the end",
                    h.retried,
                    c.at_end.draining
                );
            }
            assert!(
                text.contains(" requests sent again (never processed)"),
                "{text}"
            );
            // The server processed each request once: what it answered is
            // what was completed, give or take what was on its way at the end.
            let run = srv.stats().responses_total();
            assert!(
                (c.completed..=c.completed + c.in_flight).contains(&run),
                "{p:?} {mode:?}: the server answered {run}: {c:?}"
            );
            assert_eq!(c.status_codes.get(200), c.completed, "{p:?} {mode:?}: {c:?}");
        }
    }
}

per_protocol! {
    /// Both at once: a server that goes away after 50 requests on each
    /// connection, and refuses one stream in ten: the refused and those
    /// above a GOAWAY were never processed, so they go out again on another
    /// stream; nothing is lost, the ledger balances, and the server
    /// answered exactly what metron completed (or still waited for).
    except [http1]
    fn refused_and_goaway_streams_are_sent_again_not_lost(p) {
        let _g = serial();
        let srv = p.stream_faults(Some(50), Some(Pick::Every(10)), ServeConfig::default());
        let args = ["-t1", "-c4", "-m8", "-R1000", "-d2s"];
        let (o, text) = p.bench_within(&args, &p.url(&srv, "/"));
        assert_balanced(&o);
        let c = &o.stats.counters;
        assert_eq!(c.errors.lost_requests(), 0, "{p:?}: {c:?}\n{text}");
        assert!(c.http2.retried > 0, "{p:?}: {c:?}");
        let stats = srv.stats();
        assert!(
            p.server_goaways(&stats) > 0 && p.server_resets(&stats) > 0,
            "{p:?}: {c:?}"
        );
        // Every completed request was answered once by the server.
        assert_eq!(c.status_codes.get(200), c.completed, "{p:?}: {c:?}");
        assert!(c.completed >= 1900, "{p:?}: {c:?}");
    }
}
