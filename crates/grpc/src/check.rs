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
    /// The value as protobuf's JSON mapping writes it, strings unquoted.
    value: String,
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
        let mut last = None;
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
                last = Some(field);
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
        if let Some(field) = last {
            fits(&field, value).map_err(bad)?;
        }
        Ok(Check {
            reply,
            path,
            value: value.to_string(),
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
        // Strings compare unquoted; numbers, booleans and the rest as JSON
        // writes them.
        let written = match at {
            serde_json::Value::String(s) => return *s == self.value,
            other => other.to_string(),
        };
        written == self.value
    }

    /// The check as given, for the report.
    pub fn describe(&self) -> String {
        format!("{}={}", self.path.join("."), self.value)
    }
}

/// Whether `value` is one a single field of `field`'s type can hold, as
/// protobuf's JSON mapping writes it: a check that no reply could pass
/// would count every call as failed.
fn fits(field: &FieldDescriptor, value: &str) -> Result<(), String> {
    if field.is_list() || field.is_map() {
        return Ok(());
    }
    let name = field.name();
    let whole = |ok: bool, what: &str| match ok {
        true => Ok(()),
        false => Err(format!(
            "{name} is {what}, which {value:?} is not; give a value of its type"
        )),
    };
    match field.kind() {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            whole(value.parse::<i32>().is_ok(), "a 32-bit integer")
        }
        Kind::Uint32 | Kind::Fixed32 => {
            whole(value.parse::<u32>().is_ok(), "an unsigned 32-bit integer")
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            whole(value.parse::<i64>().is_ok(), "a 64-bit integer")
        }
        Kind::Uint64 | Kind::Fixed64 => {
            whole(value.parse::<u64>().is_ok(), "an unsigned 64-bit integer")
        }
        Kind::Float | Kind::Double => whole(
            value.parse::<f64>().is_ok() || ["NaN", "Infinity", "-Infinity"].contains(&value),
            "a number",
        ),
        Kind::Bool => whole(value == "true" || value == "false", "true or false"),
        Kind::Enum(e) => {
            if e.get_value_by_name(value).is_some() {
                return Ok(());
            }
            let names: Vec<String> = e.values().map(|v| v.name().to_string()).collect();
            Err(format!(
                "{name} is the enum {}, which has no value {value}; it has {}",
                e.full_name(),
                names.join(", ")
            ))
        }
        Kind::String | Kind::Bytes | Kind::Message(_) => Ok(()),
    }
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
            e.contains("greet.HelloReply has no field mesage; it has message, seq, at"),
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
    }
}
