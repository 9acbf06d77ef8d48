//! Several endpoints of the same call behind one [`Protocol`]: each new connection goes to
//! the next endpoint in turn, so N clients spread evenly over a cluster's members.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{CallError, Fixed, Protocol, Reply};

pub struct RoundRobin<P> {
    parts: Vec<P>,
    next: AtomicUsize,
}

impl<P: Protocol> RoundRobin<P> {
    /// `parts` must not be empty.
    pub fn new(parts: Vec<P>) -> RoundRobin<P> {
        assert!(!parts.is_empty(), "RoundRobin needs at least one endpoint");
        RoundRobin {
            parts,
            next: AtomicUsize::new(0),
        }
    }
}

impl<P> RoundRobin<P> {
    /// The client for the first endpoint.
    pub fn first(&self) -> &P {
        &self.parts[0]
    }
}

impl<P: Protocol> Protocol for RoundRobin<P> {
    type Conn = (usize, P::Conn);

    async fn connect(&self) -> Result<Self::Conn, CallError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.parts.len();
        Ok((i, self.parts[i].connect().await?))
    }

    async fn call(&self, conn: &mut Self::Conn, seq: u64) -> Result<Reply, CallError> {
        self.parts[conn.0].call(&mut conn.1, seq).await
    }

    fn reusable(&self, conn: &Self::Conn) -> bool {
        self.parts[conn.0].reusable(&conn.1)
    }

    fn partial_items(&self, conn: &Self::Conn) -> u64 {
        self.parts[conn.0].partial_items(&conn.1)
    }

    fn tls(&self) -> Option<String> {
        self.parts.iter().find_map(P::tls)
    }

    /// One endpoint's fixed call (several endpoints' requests differ, by their `Host` at
    /// least).
    fn fixed(&self) -> Option<Fixed<'_>> {
        match &self.parts[..] {
            [one] => one.fixed(),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self.parts.len() {
            1 => self.parts[0].describe(),
            n => format!(
                "{} (and {} more endpoints, clients spread evenly)",
                self.parts[0].describe(),
                n - 1
            ),
        }
    }
}
