//! zsmalloc's fullness groups: a zspage's group by the share of its objects in use, and
//! the intrusive list of each group's zspages, under its class's lock.

use super::{ClassState, NIL};

/// zsmalloc's `enum fullness_group`: a zspage's group by the share of its objects in use,
/// `ZS_INUSE_RATIO_0` (none: a zspage so empty is released at once, so no list holds one),
/// then one group per 10% (`ZS_INUSE_RATIO_10` for under 10% .. `ZS_INUSE_RATIO_99` for 90%
/// and more, but not all), and `ZS_INUSE_RATIO_100` (full).
pub(in crate::pool) const ZS_INUSE_RATIO_0: usize = 0;
/// Zspages with under 10% of their objects in use, but at least one.
pub(in crate::pool) const ZS_INUSE_RATIO_10: usize = 1;
/// Zspages with 90% or more of their objects in use, but not all.
pub(in crate::pool) const ZS_INUSE_RATIO_99: usize = 10;
/// Full zspages.
pub(in crate::pool) const ZS_INUSE_RATIO_100: usize = 11;
/// Fullness groups, each a list.
pub(in crate::pool) const NR_FULLNESS_GROUPS: usize = 12;

/// zsmalloc's `get_fullness_group`: the group of a zspage with `inuse` of its `objs`
/// objects in use.
pub(in crate::pool) fn fullness_group(inuse: usize, objs: usize) -> usize {
    if inuse == 0 {
        ZS_INUSE_RATIO_0
    } else if inuse == objs {
        ZS_INUSE_RATIO_100
    } else {
        // 1 of 127 objects is a ratio of 0, yet belongs in `ZS_INUSE_RATIO_10`: hence + 1.
        100 * inuse / objs / 10 + 1
    }
}

impl ClassState {
    /// Puts zspage `id` at the head of group `group`'s list (`insert_zspage`); a full one
    /// only records its group.
    fn insert_zspage(&mut self, id: u32, group: usize) {
        if group == ZS_INUSE_RATIO_100 {
            let z = self.rows.head_mut(id);
            (z.group, z.prev, z.next) = (group as u8, NIL, NIL);
            return;
        }
        let head = self.fullness[group];
        if head != NIL {
            self.rows.head_mut(head).prev = id;
        }
        let z = self.rows.head_mut(id);
        (z.group, z.prev, z.next) = (group as u8, NIL, head);
        self.fullness[group] = id;
    }

    /// Takes zspage `id` off its group's list (`remove_zspage`), if it is on one.
    pub(in crate::pool) fn remove_zspage(&mut self, id: u32) {
        let z = *self.rows.head(id);
        let (group, prev, next) = (z.group as usize, z.prev, z.next);
        if group == ZS_INUSE_RATIO_100 {
            return;
        }
        if prev == NIL {
            debug_assert_eq!(
                self.fullness[group], id,
                "a zspage heads its list or has a prev"
            );
            self.fullness[group] = next;
        } else {
            self.rows.head_mut(prev).next = next;
        }
        if next != NIL {
            self.rows.head_mut(next).prev = prev;
        }
    }

    /// Moves zspage `id` (of `objs` objects) to the group its objects in use put it in
    /// (`fix_fullness_group`), at its list's head where it changes group. A zspage just
    /// opened (in no list) is put in one.
    pub(in crate::pool) fn fix_fullness_group(&mut self, id: u32, objs: usize) {
        debug_assert_eq!(objs, self.objs as usize);
        let z = self.rows.head(id);
        let group = self.group_of(z.inuse);
        let old = z.group as usize;
        if old == group {
            return;
        }
        if old != ZS_INUSE_RATIO_0 {
            self.remove_zspage(id);
        }
        self.insert_zspage(id, group);
    }

    /// The zspage allocation takes an object from (`find_get_zspage`): the head of the
    /// fullest group with room, other than `except`.
    pub(in crate::pool) fn find_get_zspage(&self, except: Option<u32>) -> Option<u32> {
        (ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99)
            .rev()
            .find_map(|g| self.list(g).find(|&id| Some(id) != except))
    }

    /// The zspages of group `group`, from its list's head.
    pub(in crate::pool) fn list(&self, group: usize) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.fullness[group];
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let id = at;
                at = self.rows.head(id).next;
                id
            })
        })
    }
}
