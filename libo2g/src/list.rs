//! The module-wide list of endpoints (`O2G_IOC_LIST_ENDPOINTS`).

use std::io;

use crate::abi;

/// Every endpoint of the module with its counters, as `o2g-stat` shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointListing {
    /// The endpoints returned, at most [`abi::O2G_MAX_LIST`].
    pub endpoints: Vec<abi::EndpointSummary>,
    /// How many endpoints the module had; more than `endpoints.len()` if
    /// the list was cut at [`abi::O2G_MAX_LIST`] or kept growing while read.
    pub total: u32,
}

impl EndpointListing {
    /// Whether every endpoint the module reported is in `endpoints`.
    pub fn is_complete(&self) -> bool {
        self.endpoints.len() as u64 >= u64::from(self.total)
    }
}

/// Capacity of the first request; most machines run few MPI processes.
const FIRST_CAPACITY: u32 = 64;
/// Requests before settling for a partial list of a fast-growing population.
const ATTEMPTS: usize = 4;

/// Lists endpoints through `list`, which fills a buffer and returns the
/// module's count (as [`crate::raw`]'s `list_endpoints` does), growing the
/// buffer while the count exceeds it, up to [`abi::O2G_MAX_LIST`].
pub(crate) fn list_with(
    mut list: impl FnMut(&mut [abi::EndpointSummary]) -> io::Result<u32>,
) -> io::Result<EndpointListing> {
    let mut capacity = FIRST_CAPACITY;
    let mut attempt = 1;
    loop {
        let mut endpoints = vec![abi::EndpointSummary::default(); capacity as usize];
        let total = list(&mut endpoints)?;
        if total <= capacity || capacity == abi::O2G_MAX_LIST || attempt == ATTEMPTS {
            endpoints.truncate(total.min(capacity) as usize);
            return Ok(EndpointListing { endpoints, total });
        }
        // Leave room for endpoints opened between two requests.
        capacity = total.saturating_add(total / 8 + 1).min(abi::O2G_MAX_LIST);
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer sizes a simulated module was offered, in order.
    type Offered = std::rc::Rc<std::cell::RefCell<Vec<usize>>>;

    /// A module with `population(call)` endpoints on the call-th request.
    fn module(
        population: impl Fn(usize) -> u32,
    ) -> (
        impl FnMut(&mut [abi::EndpointSummary]) -> io::Result<u32>,
        Offered,
    ) {
        let capacities = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = capacities.clone();
        let mut call = 0;
        let f = move |buf: &mut [abi::EndpointSummary]| {
            seen.borrow_mut().push(buf.len());
            let n = population(call);
            call += 1;
            for (i, e) in buf.iter_mut().take(n as usize).enumerate() {
                e.pid = 1000 + i as u32;
                e.endpoint = i as u32;
            }
            Ok(n)
        };
        (f, capacities)
    }

    #[test]
    fn a_small_population_takes_one_request() {
        let (f, caps) = module(|_| 3);
        let l = list_with(f).unwrap();
        assert_eq!(l.total, 3);
        assert_eq!(l.endpoints.len(), 3);
        assert!(l.is_complete());
        assert_eq!(l.endpoints[2].pid, 1002);
        assert_eq!(caps.borrow().len(), 1);
    }

    #[test]
    fn none_at_all() {
        let (f, _) = module(|_| 0);
        let l = list_with(f).unwrap();
        assert!(l.endpoints.is_empty() && l.is_complete());
    }

    #[test]
    fn the_buffer_grows_to_the_count() {
        let (f, caps) = module(|_| 500);
        let l = list_with(f).unwrap();
        assert_eq!(l.endpoints.len(), 500);
        assert!(l.is_complete());
        assert_eq!(l.endpoints[499].endpoint, 499);
        let caps = caps.borrow();
        assert_eq!(caps.len(), 2);
        assert!(caps[1] >= 500, "{caps:?}");
    }

    #[test]
    fn the_buffer_stops_growing_at_the_abi_maximum() {
        let (f, caps) = module(|_| abi::O2G_MAX_LIST + 10);
        let l = list_with(f).unwrap();
        assert_eq!(l.endpoints.len(), abi::O2G_MAX_LIST as usize);
        assert_eq!(l.total, abi::O2G_MAX_LIST + 10);
        assert!(!l.is_complete());
        assert!(caps
            .borrow()
            .iter()
            .all(|&c| c <= abi::O2G_MAX_LIST as usize));
    }

    #[test]
    fn a_population_growing_faster_than_the_buffer_gives_up_partially() {
        let (f, caps) = module(|call| 100 * 4u32.pow(call as u32));
        let l = list_with(f).unwrap();
        assert_eq!(caps.borrow().len(), ATTEMPTS);
        assert!(!l.is_complete());
        assert_eq!(l.endpoints.len(), *caps.borrow().last().unwrap());
    }

    #[test]
    fn errors_pass_through() {
        let err = list_with(|_| Err(io::Error::from_raw_os_error(libc::ENOTTY))).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY));
    }
}
