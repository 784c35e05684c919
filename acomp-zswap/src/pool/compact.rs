//! Compaction (`zs_compact`): the objects of the emptiest zspages of a class, and their
//! move into fuller ones.

use super::class::{ZS_INUSE_RATIO_10, ZS_INUSE_RATIO_99};
use super::{Handle, PAGE_SIZE, Pool};

impl Pool {
    /// The objects compaction should move (`zs_compact`): in each class whose free objects
    /// add up to at least a zspage, the objects of the zspages of its emptiest fullness
    /// groups (as `isolate_src_zspage` takes them, from `ZS_INUSE_RATIO_10` up), as many
    /// zspages as the other zspages' room takes in. Within a group, from its list's tail, so
    /// that the zspage at the head, where [`Pool::migrate`] allocates, comes last. Each as
    /// (owner's tag, place); a place may be stale by the time the owner moves it, which
    /// [`Pool::migrate`]'s caller checks.
    pub fn compaction_candidates(&self) -> Vec<(u64, (u16, u32, u16))> {
        let mut out = Vec::new();
        for (index, class) in self.classes.iter().enumerate() {
            let state = class.state.lock();
            let per = class.info.objs_per_zspage;
            let mut partial = Vec::new();
            for group in ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99 {
                let at = partial.len();
                partial.extend(state.list(group));
                partial[at..].reverse();
            }
            let free_of = |id: u32| per - state.inuse(id);
            let mut free: usize = partial.iter().map(|&id| free_of(id)).sum();
            for &id in &partial {
                let f = free_of(id);
                let used = per - f;
                // Moving this zspage's objects needs `used` free objects elsewhere.
                if free < per || free - f < used {
                    break;
                }
                free -= per;
                let mut is_free = vec![false; per];
                state
                    .free_objects(id)
                    .for_each(|o| is_free[o as usize] = true);
                for obj in (0..per as u16).filter(|&o| !is_free[o as usize]) {
                    out.push((state.owner(id, obj), (index as u16, id, obj)));
                }
            }
        }
        out
    }

    /// Moves the first `len` bytes of the object into an object of another zspage of its
    /// class with room (of the fullest group, `isolate_dst_zspage`), frees the old one and points `handle` at the new:
    /// zsmalloc's `migrate_zspage`. The caller holds the only way to the object (the store's
    /// entry lock), so no reader sees it move. Returns false, changing nothing, where no
    /// other zspage has room.
    pub fn migrate(&self, handle: &mut Handle, len: usize) -> bool {
        let index = handle.class();
        let class = &self.classes[index];
        let owner = self.owner(handle);
        let Some(mut new) = Self::alloc_from_partial(index, class, owner, Some(handle.zspage))
        else {
            return false;
        };
        self.allocated(class);
        let mut buf = [0u8; PAGE_SIZE];
        let len = len.min(class.info.size);
        self.read_sg(handle, len, |frags| {
            let mut at = 0;
            for f in frags {
                buf[at..at + f.len()].copy_from_slice(f);
                at += f.len();
            }
        });
        self.write(&mut new, &buf[..len]);
        let old = std::mem::replace(handle, new);
        self.free(old);
        true
    }
}
