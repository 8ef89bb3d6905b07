//! NCCL across nodes: rank 0 makes the communicator's unique id and every
//! node receives it; a node's GPUs take consecutive global ranks after
//! those of the lower ranks.

use super::preflight::NodeVerdict;
use anyhow::Result;
use powerlab_rack::RackLink;
use powerlab_rack::protocol::gather_json;

/// The rack-wide communicator of this node (None if rank 0 had no NCCL id).
pub fn world(
    link: &RackLink,
    verdicts: &[NodeVerdict],
) -> Result<Option<powerlab_cuda::NcclWorld>> {
    let rank = link.info().rank;
    let id = if rank == 0 {
        powerlab_cuda::nccl_unique_id()
            .ok()
            .map(|id| id.iter().map(|c| *c as u8).collect::<Vec<u8>>())
    } else {
        None
    };
    let all = link.submit(move |t| gather_json(t, &id)).wait()?;
    Ok(
        match all.into_iter().next().flatten().filter(|b| b.len() == 128) {
            Some(bytes) => {
                let mut id = [0 as std::ffi::c_char; 128];
                for (d, b) in id.iter_mut().zip(bytes) {
                    *d = b as std::ffi::c_char;
                }
                // A node's GPUs take consecutive global ranks after those of lower ranks.
                let first_rank = verdicts[..rank].iter().map(|v| v.gpus).sum();
                Some(powerlab_cuda::NcclWorld {
                    id,
                    first_rank,
                    ranks: verdicts.iter().map(|v| v.gpus).sum(),
                })
            }
            None => None,
        },
    )
}
