//! The longest path through a directed graph that may have cycles, counted so that it bounds
//! every simple path: each strongly connected component weighs as much as all its nodes.

/// The largest total weight of a path through `edges` (node `i`'s successors are
/// `edges[i]`), where a path entering a strongly connected component is charged the weight of
/// every node in it (`weight[i]` per node). That bounds the weight of every simple path, so it
/// bounds the depth of any recursion that enters each node at most once per stack, whatever
/// order it walks the graph in.
///
/// Iterative (Tarjan's components, then the components in reverse topological order), so a
/// graph of any depth is measured in constant stack.
pub fn heaviest_path(edges: &[Vec<usize>], weight: &[usize]) -> usize {
    let components = components(edges);
    // Tarjan's algorithm closes a component after every component it reaches: in that order,
    // the successors' totals are known when a component is reached.
    let mut best = vec![0usize; components.count];
    let mut heaviest = 0;
    for (c, members) in components.members.iter().enumerate() {
        let own: usize = members.iter().map(|&v| weight[v]).sum();
        let mut after = 0;
        for &v in members {
            for &w in &edges[v] {
                let d = components.of[w];
                if d != c {
                    after = after.max(best[d]);
                }
            }
        }
        best[c] = own.saturating_add(after);
        heaviest = heaviest.max(best[c]);
    }
    heaviest
}

/// The strongly connected components of a graph, in the order Tarjan's algorithm closes them.
struct Components {
    count: usize,
    /// Each node's component.
    of: Vec<usize>,
    /// Each component's nodes.
    members: Vec<Vec<usize>>,
}

/// Tarjan's algorithm with an explicit call stack.
fn components(edges: &[Vec<usize>]) -> Components {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut of = vec![UNSEEN; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut next = 0usize;
    // (node, how many of its successors were looked at)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        calls.push((root, 0));
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = calls.last_mut() {
            if let Some(&w) = edges[v].get(*i) {
                *i += 1;
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let c = members.len();
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    of[w] = c;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                members.push(component);
            }
        }
    }
    Components {
        count: members.len(),
        of,
        members,
    }
}

#[cfg(test)]
mod tests {
    use super::heaviest_path;

    #[test]
    fn a_chain_weighs_its_nodes() {
        let edges = vec![vec![1], vec![2], vec![]];
        assert_eq!(heaviest_path(&edges, &[1, 1, 1]), 3);
        assert_eq!(heaviest_path(&edges, &[5, 1, 2]), 8);
    }

    #[test]
    fn a_cycle_weighs_all_its_nodes_whatever_the_entry() {
        // 0 -> 1 -> 2 -> 3 -> 1, and 4 -> 3: every simple path through the cycle is at most
        // 1 + 3 long; entered from 4 it is 1 + 3 too.
        let edges = vec![vec![1], vec![2], vec![3], vec![1], vec![3]];
        assert_eq!(heaviest_path(&edges, &[1; 5]), 4);
        // A self-loop is one node.
        assert_eq!(heaviest_path(&[vec![0]], &[1]), 1);
    }

    #[test]
    fn branches_take_the_heavier_side_and_empty_graphs_weigh_nothing() {
        let edges = vec![vec![1, 2], vec![], vec![3], vec![]];
        assert_eq!(heaviest_path(&edges, &[1, 10, 1, 1]), 11);
        assert_eq!(heaviest_path(&[], &[]), 0);
    }

    #[test]
    fn a_very_deep_chain_is_measured_without_recursion() {
        let n = 1_000_000;
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        assert_eq!(heaviest_path(&edges, &vec![1; n]), n);
    }
}
