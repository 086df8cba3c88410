//! The bipartite matching that pairs the subschemas of `anyOf`/`oneOf`
//! across versions.

use super::TooComplex;

/// A maximum matching in the bipartite graph `edges` (left index → right
/// indices), by augmenting paths, tried in order. Each step of the search
/// costs one step of the budget.
pub(super) fn maximum_matching<T>(
    edges: &[Vec<(usize, T)>],
    right_size: usize,
    steps: &mut usize,
    budget: usize,
) -> Result<Vec<Option<usize>>, TooComplex> {
    let mut right_owner: Vec<Option<usize>> = vec![None; right_size];
    for left in 0..edges.len() {
        let mut visited = vec![false; right_size];
        augment(left, edges, &mut right_owner, &mut visited, steps, budget)?;
    }
    let mut matching = vec![None; edges.len()];
    for (right, owner) in right_owner.iter().enumerate() {
        if let Some(left) = owner {
            matching[*left] = Some(right);
        }
    }
    Ok(matching)
}

fn augment<T>(
    left: usize,
    edges: &[Vec<(usize, T)>],
    right_owner: &mut [Option<usize>],
    visited: &mut [bool],
    steps: &mut usize,
    budget: usize,
) -> Result<bool, TooComplex> {
    for (right, _) in &edges[left] {
        *steps += 1;
        if *steps > budget {
            return Err(TooComplex { too_deep: false });
        }
        if visited[*right] {
            continue;
        }
        visited[*right] = true;
        let free = match right_owner[*right] {
            None => true,
            Some(owner) => augment(owner, edges, right_owner, visited, steps, budget)?,
        };
        if free {
            right_owner[*right] = Some(left);
            return Ok(true);
        }
    }
    Ok(false)
}
