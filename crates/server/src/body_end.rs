//! A response body that carries a guard until the body has been written or dropped, and
//! tells the guard when the body was read to its end: what keeps a request in flight for the
//! accept loop ([`crate::connections`]) and what writes the request's log line
//! ([`crate::log`]) when its response ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};

/// What a [`Guarded`] body carries: told when the body's last frame has been read (or when a
/// body with nothing left is dropped); dropped with the body (whether it ended or the client
/// went away).
pub(crate) trait BodyEnd: Send + 'static {
    /// The body's last frame has been read.
    fn ended(&mut self) {}
}

/// `body` with `guard` riding along until it is written or dropped.
pub(crate) struct Guarded<G: BodyEnd> {
    body: Body,
    guard: G,
}

impl<G: BodyEnd> Guarded<G> {
    /// `body` carrying `guard`.
    pub(crate) fn new(body: Body, guard: G) -> Self {
        Guarded { body, guard }
    }
}

impl<G: BodyEnd> Drop for Guarded<G> {
    /// A body with nothing left (an empty one the server never had to read) ended too.
    fn drop(&mut self) {
        if self.body.is_end_stream() {
            self.guard.ended();
        }
    }
}

impl<G: BodyEnd + Unpin> HttpBody for Guarded<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            this.guard.ended();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
