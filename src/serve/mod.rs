#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs { #[arg(long)] pub listen: Option<String> }

pub struct ServeConfig { pub listen: std::net::SocketAddr, pub stall_at: Option<std::time::Duration>, pub stall_for: Option<std::time::Duration> }

pub struct Server;
impl Server { pub fn start(_c: ServeConfig) -> std::io::Result<Server> { Ok(Server) } pub fn addr(&self) -> std::net::SocketAddr { todo!() } pub fn shutdown(self) {} }
pub fn run(_a: ServeArgs) -> std::io::Result<()> { Ok(()) }
impl Default for ServeConfig { fn default() -> Self { ServeConfig { listen: "127.0.0.1:0".parse().unwrap(), stall_at: None, stall_for: None } } }
