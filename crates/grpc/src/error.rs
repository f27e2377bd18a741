//! Why a call cannot be made: each a one-line message that names the
//! problem and the fix.

/// Why a schema, a method or a message could not be had.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GrpcError {
    #[error("cannot read --proto {file}: {why}; give a .proto file that compiles (its imports found under --import-path DIR)")]
    Proto { file: String, why: String },
    #[error("cannot read --protoset {file}: {why}; give a FileDescriptorSet, as protoc --include_imports --descriptor_set_out=FILE writes it")]
    Protoset { file: String, why: String },
    #[error("--grpc {call}: name the method as package.Service/Method (as in the .proto)")]
    CallName { call: String },
    #[error("--grpc {call}: no service {service} in the schema{known}")]
    NoService {
        call: String,
        service: String,
        known: String,
    },
    #[error("--grpc {call}: service {service} has no method {method}; it has {known}")]
    NoMethod {
        call: String,
        service: String,
        method: String,
        known: String,
    },
    #[error("--grpc {call} is a {shape} method, which metron does not call; call a unary or a server-streaming method")]
    Unsupported { call: String, shape: &'static str },
    #[error("--grpc-check {spec}: {why}")]
    Check { spec: String, why: String },
    #[error("{what}: not a {message} in protobuf's JSON mapping: {why}")]
    Message {
        what: String,
        message: String,
        why: String,
    },
}
