//! `--grpc-check FIELD=VALUE`: a reply is only right when a field of its
//! message holds a value. Replies are otherwise counted, not decoded; with
//! a check each is decoded and the field looked up.

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, SerializeOptions};

use crate::error::GrpcError;
use crate::wire::{message_len, PREFIX_LEN};

/// A field of the reply message (by a dotted path through nested
/// messages) and the value it must hold.
#[derive(Clone, Debug)]
pub struct Check {
    reply: MessageDescriptor,
    /// Field names, outermost first, as the `.proto` spells them.
    path: Vec<String>,
    /// The value as given, for the report.
    value: String,
    /// The value as the field holds it, compared by meaning: `0`, `+0`
    /// and `0.0` are the same number.
    expect: Expect,
}

/// A value a reply's field is compared with.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// A string, bytes (base64) or an enum value's name.
    Text(String),
    Int(i128),
    Float(f64),
    Bool(bool),
    /// A message, a list or a map: compared as protobuf's JSON mapping
    /// writes it.
    Json(String),
}

impl Check {
    /// Reads `FIELD=VALUE` against the reply message `reply`: every name
    /// of the path must be a field, and each but the last a message.
    pub(crate) fn new(spec: &str, reply: MessageDescriptor) -> Result<Check, GrpcError> {
        let bad = |why: String| GrpcError::Check {
            spec: spec.to_string(),
            why,
        };
        let Some((path, value)) = spec.split_once('=') else {
            return Err(bad("write it as FIELD=VALUE, e.g. message=hello".into()));
        };
        let path: Vec<String> = path.trim().split('.').map(str::to_string).collect();
        let mut message = reply.clone();
        let mut expect = Expect::Json(value.to_string());
        for (k, name) in path.iter().enumerate() {
            let Some(field) = message.get_field_by_name(name) else {
                let known: Vec<String> = message.fields().map(|f| f.name().to_string()).collect();
                return Err(bad(format!(
                    "{} has no field {name}; it has {}",
                    message.full_name(),
                    known.join(", ")
                )));
            };
            if k + 1 == path.len() {
                expect = expected(&field, value).map_err(bad)?;
            } else {
                match field.kind() {
                    Kind::Message(inner) if !field.is_list() && !field.is_map() => message = inner,
                    _ => {
                        return Err(bad(format!(
                            "{name} is not a message, so it has no field {}",
                            path[k + 1]
                        )))
                    }
                }
            }
        }
        Ok(Check {
            reply,
            path,
            value: value.to_string(),
            expect,
        })
    }

    /// Whether every message of a reply body holds the value (a body with
    /// no message, a compressed one or one that does not decode fails).
    pub fn holds(&self, mut body: &[u8]) -> bool {
        let mut seen = false;
        while !body.is_empty() {
            let Some(prefix) = body.first_chunk::<PREFIX_LEN>() else {
                return false;
            };
            let len = message_len(prefix);
            let Some(message) = body.get(PREFIX_LEN..PREFIX_LEN + len) else {
                return false;
            };
            if prefix[0] != 0 || !self.holds_in(message) {
                return false;
            }
            seen = true;
            body = &body[PREFIX_LEN + len..];
        }
        seen
    }

    fn holds_in(&self, bytes: &[u8]) -> bool {
        let Ok(message) = DynamicMessage::decode(self.reply.clone(), bytes) else {
            return false;
        };
        // Fields at their defaults are written too: `count=0` holds for a
        // count the wire left out.
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false);
        let Ok(json) = message.serialize_with_options(serde_json::value::Serializer, &options)
        else {
            return false;
        };
        let mut at = &json;
        for name in &self.path {
            match at.get(name) {
                Some(v) => at = v,
                None => return false,
            }
        }
        // 64-bit integers and the floats NaN and Infinity are written as
        // strings, every other number as a number.
        use serde_json::Value as J;
        match (&self.expect, at) {
            (Expect::Text(t), J::String(s)) => s == t,
            (Expect::Int(n), J::Number(v)) => v.as_i128() == Some(*n),
            (Expect::Int(n), J::String(v)) => v.parse::<i128>().ok() == Some(*n),
            (Expect::Float(f), J::Number(v)) => v.as_f64().is_some_and(|v| same(v, *f)),
            (Expect::Float(f), J::String(v)) => float(v).is_some_and(|v| same(v, *f)),
            (Expect::Bool(b), J::Bool(v)) => v == b,
            (Expect::Json(j), v) => match v {
                J::String(s) => s == j,
                other => serde_json::to_string(other).is_ok_and(|t| t == *j),
            },
            _ => false,
        }
    }

    /// The check as given, for the report.
    pub fn describe(&self) -> String {
        format!("{}={}", self.path.join("."), self.value)
    }
}

/// The value `value` means for a single field of `field`'s type, as
/// protobuf's JSON mapping reads it: a check no reply could pass would
/// count every call as failed, so a value the type cannot hold is refused.
fn expected(field: &FieldDescriptor, value: &str) -> Result<Expect, String> {
    if field.is_list() || field.is_map() {
        return Ok(Expect::Json(value.to_string()));
    }
    let name = field.name();
    let refused =
        |what: &str| format!("{name} is {what}, which {value:?} is not; give a value of its type");
    let int = |lo: i128, hi: i128, what: &str| match value.parse::<i128>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(Expect::Int(n)),
        _ => Err(refused(what)),
    };
    match field.kind() {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            int(i32::MIN.into(), i32::MAX.into(), "a 32-bit integer")
        }
        Kind::Uint32 | Kind::Fixed32 => int(0, u32::MAX.into(), "an unsigned 32-bit integer"),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            int(i64::MIN.into(), i64::MAX.into(), "a 64-bit integer")
        }
        Kind::Uint64 | Kind::Fixed64 => int(0, u64::MAX.into(), "an unsigned 64-bit integer"),
        Kind::Float | Kind::Double => {
            let max = match field.kind() {
                Kind::Float => f64::from(f32::MAX),
                _ => f64::MAX,
            };
            // A float field holds the nearest 32-bit float to the value.
            let held = |f: f64| match field.kind() {
                Kind::Float => f64::from(f as f32),
                _ => f,
            };
            match float(value) {
                Some(f) if f.is_nan() || f.is_infinite() || f.abs() <= max => {
                    Ok(Expect::Float(held(f)))
                }
                _ => Err(refused("a number its type can hold")),
            }
        }
        Kind::Bool => match value {
            "true" => Ok(Expect::Bool(true)),
            "false" => Ok(Expect::Bool(false)),
            _ => Err(refused("true or false")),
        },
        Kind::Enum(e) => {
            // By name, or by number for a value the enum names.
            let known = e
                .get_value_by_name(value)
                .or_else(|| e.get_value(value.parse().ok()?));
            if let Some(v) = known {
                return Ok(Expect::Text(v.name().to_string()));
            }
            let names: Vec<String> = e
                .values()
                .map(|v| format!("{} ({})", v.name(), v.number()))
                .collect();
            Err(format!(
                "{name} is the enum {}, which has no value {value}; it has {}",
                e.full_name(),
                names.join(", ")
            ))
        }
        Kind::String | Kind::Bytes => Ok(Expect::Text(value.to_string())),
        Kind::Message(_) => Ok(Expect::Json(value.to_string())),
    }
}

/// A float as protobuf's JSON mapping writes one: a number, or `NaN`,
/// `Infinity`, `-Infinity` (a number too large for its type is none).
fn float(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => text.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
}

/// The same float: NaN is NaN, and 0 is -0.
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

#[cfg(test)]
mod tests {
    use prost_reflect::prost::Message as _;
    use prost_reflect::Value;

    use super::*;
    use crate::schema::tests::schema;
    use crate::wire::frame;

    fn reply(s: &crate::Schema, text: &str, n: i64) -> Vec<u8> {
        let desc = s.pool().get_message_by_name("greet.HelloReply").unwrap();
        let mut m = DynamicMessage::new(desc);
        m.set_field_by_name("message", Value::String(text.into()));
        m.set_field_by_name("seq", Value::I64(n));
        frame(&m.encode_to_vec())
    }

    #[test]
    fn a_field_is_compared_as_json_writes_it() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        let hello = reply(&s, "hello", 7);
        assert!(m.check("message=hello").unwrap().holds(&hello));
        assert!(!m.check("message=bye").unwrap().holds(&hello));
        // 64-bit integers are strings in the JSON mapping: compared unquoted.
        assert!(m.check("seq=7").unwrap().holds(&hello));
        // A field at its default is on the wire as nothing, and still 0.
        assert!(m.check("seq=0").unwrap().holds(&reply(&s, "x", 0)));
        // Every message of a stream must hold it; none at all fails.
        let two = [hello.clone(), reply(&s, "hello", 8)].concat();
        assert!(m.check("message=hello").unwrap().holds(&two));
        assert!(!m.check("seq=7").unwrap().holds(&two));
        assert!(!m.check("message=hello").unwrap().holds(b""));
        assert!(!m.check("message=hello").unwrap().holds(&hello[..6]));
    }

    #[test]
    fn a_check_names_what_the_reply_has() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        let e = m.check("mesage=x").unwrap_err().to_string();
        assert!(
            e.contains(
                "greet.HelloReply has no field mesage; it has message, seq, at, score, mood"
            ),
            "{e}"
        );
        let e = m.check("message.x=1").unwrap_err().to_string();
        assert!(e.contains("message is not a message"), "{e}");
        let e = m.check("message").unwrap_err().to_string();
        assert!(e.contains("FIELD=VALUE"), "{e}");
    }

    /// A value the field cannot hold is refused before the run, not
    /// failed on every call.
    #[test]
    fn a_value_the_field_cannot_hold_is_refused() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        let e = m.check("seq=abc").unwrap_err().to_string();
        assert!(
            e.contains("seq is a 64-bit integer, which \"abc\" is not"),
            "{e}"
        );
        assert!(m.check("seq=-3").is_ok() && m.check("message=abc").is_ok());
        for (spec, said) in [
            ("score=1e39", "score is a number its type can hold"),
            ("score=nan", "score is a number its type can hold"),
            ("mood=SAD", "has no value SAD; it has CALM (0), GLAD (1)"),
            ("mood=7", "has no value 7"),
        ] {
            let e = m.check(spec).unwrap_err().to_string();
            assert!(e.contains(said), "{spec}: {e}");
        }
    }

    /// Values are compared by what they mean, not how they are spelled:
    /// `+0`, `00` and `0` are one integer, `0` and `0.0` one float (held
    /// as a 32-bit float where the field is one), and an enum value by
    /// its name or its number.
    #[test]
    fn a_value_is_compared_by_meaning() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        let desc = s.pool().get_message_by_name("greet.HelloReply").unwrap();
        let mut msg = DynamicMessage::new(desc);
        msg.set_field_by_name("seq", Value::I64(0));
        msg.set_field_by_name("score", Value::F32(0.1));
        msg.set_field_by_name("mood", Value::EnumNumber(1));
        let body = frame(&msg.encode_to_vec());
        for spec in [
            "seq=+0",
            "seq=00",
            "seq=-0",
            "score=0.1",
            "score=1e-1",
            "mood=GLAD",
            "mood=1",
        ] {
            assert!(m.check(spec).unwrap().holds(&body), "{spec}");
        }
        for spec in ["seq=1", "score=0.2", "mood=CALM", "mood=0"] {
            assert!(!m.check(spec).unwrap().holds(&body), "{spec}");
        }
        let zero = frame(
            &DynamicMessage::new(s.pool().get_message_by_name("greet.HelloReply").unwrap())
                .encode_to_vec(),
        );
        for spec in ["score=0", "score=-0", "score=0.0", "mood=CALM"] {
            assert!(m.check(spec).unwrap().holds(&zero), "{spec}");
        }
    }
}
