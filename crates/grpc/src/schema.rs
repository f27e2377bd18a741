//! The schema a call is made from: `.proto` files compiled at start, or a
//! compiled descriptor set; the method a `--grpc` name picks out of it;
//! and its request messages, built from protobuf's JSON mapping.

use std::path::{Path, PathBuf};

use prost_reflect::prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};

use crate::check::Check;
use crate::error::GrpcError;
use crate::wire::frame;

/// Every service and message type the given files define.
#[derive(Clone, Debug)]
pub struct Schema {
    pool: DescriptorPool,
}

/// Which calls a method makes: one message each way, or a stream of them
/// back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Unary,
    ServerStreaming,
}

/// One method of one service, ready to be called.
#[derive(Clone, Debug)]
pub struct Method {
    desc: MethodDescriptor,
}

impl Schema {
    #[cfg(test)]
    pub(crate) fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// Compiles `files`, finding their imports under `imports` and, after
    /// them, in each file's own directory (and protobuf's well-known
    /// types, which are built in).
    pub fn from_protos(files: &[PathBuf], imports: &[PathBuf]) -> Result<Schema, GrpcError> {
        let mut includes: Vec<PathBuf> = imports.to_vec();
        for file in files {
            let dir = match file.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !includes.contains(&dir) {
                includes.push(dir);
            }
        }
        let failed = |file: &Path, why: String| GrpcError::Proto {
            file: file.display().to_string(),
            why,
        };
        for file in files {
            if let Err(e) = std::fs::metadata(file) {
                return Err(failed(file, e.to_string()));
            }
        }
        let mut compiler = protox::Compiler::new(&includes)
            .map_err(|e| failed(&files[0], one_line(&e.to_string())))?;
        compiler.include_imports(true);
        for file in files {
            compiler
                .open_file(file)
                .map_err(|e| failed(file, located(&e, &includes)))?;
        }
        Ok(Schema {
            pool: compiler.descriptor_pool(),
        })
    }

    /// Reads a compiled FileDescriptorSet (all imports included).
    pub fn from_protoset(file: &Path) -> Result<Schema, GrpcError> {
        let failed = |why: String| GrpcError::Protoset {
            file: file.display().to_string(),
            why,
        };
        let bytes = std::fs::read(file).map_err(|e| failed(e.to_string()))?;
        let pool = DescriptorPool::decode(bytes.as_slice())
            .map_err(|e| failed(one_line(&e.to_string())))?;
        Ok(Schema { pool })
    }

    /// The method `call` names: `package.Service/Method` (or, as some
    /// tools write it, `package.Service.Method`, or as the request's path
    /// carries it, `/package.Service/Method`).
    pub fn method(&self, call: &str) -> Result<Method, GrpcError> {
        let name = call.strip_prefix('/').unwrap_or(call);
        let split = name.rfind('/').or_else(|| name.rfind('.'));
        let (service, method) = match split {
            Some(at) if at > 0 && at + 1 < name.len() => (&name[..at], &name[at + 1..]),
            _ => {
                return Err(GrpcError::CallName {
                    call: call.to_string(),
                })
            }
        };
        let Some(svc) = self.pool.get_service_by_name(service) else {
            let names: Vec<String> = self
                .pool
                .services()
                .map(|s| s.full_name().to_string())
                .collect();
            let known = if names.is_empty() {
                "; it defines no service".to_string()
            } else {
                format!(" (it has {})", names.join(", "))
            };
            return Err(GrpcError::NoService {
                call: call.to_string(),
                service: service.to_string(),
                known,
            });
        };
        let Some(desc) = svc.methods().find(|m| m.name() == method) else {
            let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
            return Err(GrpcError::NoMethod {
                call: call.to_string(),
                service: service.to_string(),
                method: method.to_string(),
                known: known.join(", "),
            });
        };
        let shape = match (desc.is_client_streaming(), desc.is_server_streaming()) {
            (false, _) => None,
            (true, false) => Some("client-streaming"),
            (true, true) => Some("bidirectional-streaming"),
        };
        if let Some(shape) = shape {
            return Err(GrpcError::Unsupported {
                call: call.to_string(),
                shape,
            });
        }
        Ok(Method { desc })
    }
}

impl Method {
    /// The request's path: `/package.Service/Method`.
    pub fn path(&self) -> String {
        format!(
            "/{}/{}",
            self.desc.parent_service().full_name(),
            self.desc.name()
        )
    }

    /// `package.Service/Method`, as a report names it.
    pub fn name(&self) -> String {
        self.path()[1..].to_string()
    }

    pub fn shape(&self) -> Shape {
        if self.desc.is_server_streaming() {
            Shape::ServerStreaming
        } else {
            Shape::Unary
        }
    }

    /// `--grpc-check FIELD=VALUE` against this method's reply message.
    pub fn check(&self, spec: &str) -> Result<Check, GrpcError> {
        Check::new(spec, self.desc.output())
    }

    /// The request message `json` describes (protobuf's JSON mapping;
    /// a field the message does not have is an error), encoded and framed:
    /// the body of a call. `what` names where the JSON came from.
    pub fn request(&self, json: &str, what: &str) -> Result<Vec<u8>, GrpcError> {
        let input = self.desc.input();
        let failed = |why: String| GrpcError::Message {
            what: what.to_string(),
            message: input.full_name().to_string(),
            why,
        };
        let mut de = serde_json::Deserializer::from_str(json);
        let message = DynamicMessage::deserialize(input.clone(), &mut de)
            .map_err(|e| failed(e.to_string()))?;
        de.end().map_err(|e| failed(e.to_string()))?;
        Ok(frame(&message.encode_to_vec()))
    }
}

/// A compiler's message with the file and line it points at, when it
/// points at one: `greet.proto:3: name 'strin' is not defined`.
fn located(e: &protox::Error, includes: &[PathBuf]) -> String {
    use miette::Diagnostic;
    let why = one_line(&e.to_string());
    let Some(name) = e.file() else {
        return why;
    };
    let offset = e
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset());
    let text = includes
        .iter()
        .find_map(|dir| std::fs::read_to_string(dir.join(name)).ok());
    match (offset, text) {
        (Some(at), Some(text)) if at <= text.len() => {
            let line = 1 + text.as_bytes()[..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            format!("{name}:{line}: {why}")
        }
        _ => format!("{name}: {why}"),
    }
}

/// A compiler's message, which may span lines (a source excerpt), as one.
fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::PREFIX_LEN;

    const GREET: &str = r#"
        syntax = "proto3";
        package greet;
        import "google/protobuf/timestamp.proto";
        service Greeter {
          rpc SayHello (HelloRequest) returns (HelloReply);
          rpc Countdown (HelloRequest) returns (stream HelloReply);
          rpc Collect (stream HelloRequest) returns (HelloReply);
          rpc Chat (stream HelloRequest) returns (stream HelloReply);
        }
        message HelloRequest { string name = 1; int32 times = 2; google.protobuf.Timestamp at = 3; }
        message HelloReply {
          string message = 1; int64 seq = 2; google.protobuf.Timestamp at = 3;
          float score = 4; Mood mood = 5;
        }
        enum Mood { CALM = 0; GLAD = 1; }
    "#;

    pub(crate) fn schema() -> (Schema, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "metron-grpc-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("greet.proto");
        std::fs::write(&file, GREET).unwrap();
        (
            Schema::from_protos(std::slice::from_ref(&file), &[]).unwrap(),
            file,
        )
    }

    #[test]
    fn a_method_is_found_by_either_spelling() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        assert_eq!(m.path(), "/greet.Greeter/SayHello");
        assert_eq!(m.shape(), Shape::Unary);
        let m = s.method("greet.Greeter.Countdown").unwrap();
        assert_eq!(m.shape(), Shape::ServerStreaming);
        // The request's own path, as servers' logs show it.
        let m = s.method("/greet.Greeter/SayHello").unwrap();
        assert_eq!(m.path(), "/greet.Greeter/SayHello");
        assert!(s.method("/").is_err() && s.method("//X").is_err());
    }

    #[test]
    fn wrong_names_say_what_there_is() {
        let (s, _) = schema();
        let e = s.method("greet.Greeter/Nope").unwrap_err().to_string();
        assert!(
            e.contains("has no method Nope; it has SayHello, Countdown"),
            "{e}"
        );
        let e = s.method("other.Svc/X").unwrap_err().to_string();
        assert!(e.contains("(it has greet.Greeter)"), "{e}");
        let e = s.method("Nope").unwrap_err().to_string();
        assert!(e.contains("package.Service/Method"), "{e}");
        let e = s.method("greet.Greeter/Collect").unwrap_err().to_string();
        assert!(e.contains("client-streaming"), "{e}");
        let e = s.method("greet.Greeter/Chat").unwrap_err().to_string();
        assert!(e.contains("bidirectional-streaming"), "{e}");
    }

    #[test]
    fn a_request_is_the_json_encoded_and_framed() {
        let (s, _) = schema();
        let m = s.method("greet.Greeter/SayHello").unwrap();
        let body = m.request(r#"{"name":"ab","times":3}"#, "--data").unwrap();
        // Field 1 (string "ab"), field 2 (varint 3).
        assert_eq!(&body[PREFIX_LEN..], &[0x0a, 2, b'a', b'b', 0x10, 3]);
        assert_eq!(&body[..PREFIX_LEN], &[0, 0, 0, 0, 6]);
        let with_time = m
            .request(r#"{"at":"1970-01-01T00:00:01Z"}"#, "--data")
            .unwrap();
        assert_eq!(&with_time[PREFIX_LEN..], &[0x1a, 2, 0x08, 1]);
        let e = m
            .request(r#"{"nmae":"x"}"#, "--data")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--data: not a greet.HelloRequest"), "{e}");
        assert!(m.request(r#"{"name":"x"} x"#, "--data").is_err());
        assert!(m.request(r#"{"times":"many"}"#, "--data").is_err());
    }

    #[test]
    fn broken_protos_are_one_line() {
        let (_, file) = schema();
        let bad = file.with_file_name("bad.proto");
        std::fs::write(&bad, "syntax = \"proto3\";\nmessage X { strin y = 1; }\n").unwrap();
        let e = Schema::from_protos(&[bad], &[]).unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains("bad.proto:2: "), "{e}");
        let e = Schema::from_protos(&[file.with_file_name("missing.proto")], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.proto") && !e.contains('\n'), "{e}");
        let garbage = file.with_file_name("garbage.pb");
        std::fs::write(&garbage, [0xff; 8]).unwrap();
        let e = Schema::from_protoset(&garbage).unwrap_err().to_string();
        assert!(e.contains("--protoset") && !e.contains('\n'), "{e}");
    }
}
