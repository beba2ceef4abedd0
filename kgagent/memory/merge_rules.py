"""The merge rules: how one source's nodes and edges fold into the memory being built.

Every rule goes through the memory's own calls where the memory has one, so a
merged state is merged exactly as an observation is:

* objects: :meth:`~kgagent.memory.Memory.upsert_object` (perceptual hash and size,
  the registration rule); a new one keeps the source's crop (same blob id);
* skills: equal when their operations are equal once object ids are mapped (the
  display names of objects aside); fitness is the execution-weighted mean, counts
  are added, the status is the livelier one (active, suspended, pruned);
* clusters: a source cluster joins the destination cluster that holds most of its
  (mapped) members, else it is created; a skill stays in one cluster;
* states: :meth:`~kgagent.memory.Memory.merge_or_create_state` with the source
  state's feature (θ_merge and θ_simi are the destination's; similarity edges are
  rebuilt for every state touched), then visits added, first/last seen kept;
* per-state statistics: explores added, tried operations united (skill ids and
  object ids remapped; a change seen by both is their mean);
* skill edges: by (from, to, skill) with counts added, mean change and last R_total
  kept, weight by Eq. 1 at the merged fitness (every edge of a skill whose fitness
  changed is re-weighed);
* input statistics: summed; blobs: copied by content hash.

Provenance: each node folded from a source gets ``{"memory": <source id>, "id":
<its id there>}`` (and the source node's own provenance) in ``origin``. A source
node whose identity the memory already holds — the node itself, or one it came
from — is *already merged* and is skipped, with the edges and statistics between
already-merged nodes: merging a memory twice adds nothing the second time.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from kgagent.memory.merge_place import MergeError
from kgagent.memory.merge_source import Source
from kgagent.memory.merge_values import (
    combine_stats,
    join_origin,
    operations_identity,
    parse_origin,
    remap_stats,
)
from kgagent.memory.skills import fitness_term
from kgagent.memory.store import Memory
from kgagent.paths import shell_word
from kgagent.records import Skill

#: Node kinds with provenance, by the table the rows come from.
KINDS = {
    "State": "archive_export_state",
    "Skill": "archive_export_skill",
    "Object": "archive_export_object",
    "SkillCluster": "archive_export_skillcluster",
}
#: Skill statuses from the least to the most alive: a merged skill takes the livelier.
STATUS_RANK = {"pruned": 0, "suspended": 1, "active": 2}
#: Report progress every this many states.
PROGRESS_EVERY = 500
#: Source objects created or merged per statement (a textured program's memory holds
#: tens of thousands).
OBJECT_CHUNK = 512


class Folder:
    """Folds sources into an open memory (the merge's work copy), counting what changed."""

    def __init__(self, mem: Memory, say: Any) -> None:
        self.m = mem
        self.say = say
        self.own = str(mem.manifest["memory_id"])
        self.counts: Counter[str] = Counter()
        self.rows: dict[str, dict[str, dict[str, Any]]] = {}
        self.known: dict[str, dict[tuple[str, str], str]] = {}
        for kind, q in KINDS.items():
            rows = {r["id"]: r for r in mem.run_named(q)}
            self.rows[kind] = rows
            self.known[kind] = {}
            for r in rows.values():
                self._remember(kind, r["id"], [{"memory": self.own, "id": r["id"]}])
                self._remember(kind, r["id"], parse_origin(r.get("origin")))
        self.merged_before = {self.own, *self._manifest_merged()}

    # ------------------------------------------------------------ identity
    def _manifest_merged(self) -> list[str]:
        return [str(m["memory"]) for m in self.m.manifest.get("merged") or [] if m.get("memory")]

    def _remember(self, kind: str, dest_id: str, keys: list[dict[str, str]]) -> None:
        for d in keys:
            self.known[kind].setdefault((d["memory"], d["id"]), dest_id)

    def _already(self, kind: str, src: Source, row: dict[str, Any]) -> str | None:
        """The node already holding this source node (itself, or a node it came from)."""
        keys = [{"memory": src.memory_id, "id": row["id"]}, *parse_origin(row.get("origin"))]
        for d in keys:
            hit = self.known[kind].get((d["memory"], d["id"]))
            if hit is not None:
                return hit
        return None

    def _origin_of(self, src: Source, row: dict[str, Any]) -> list[dict[str, str]]:
        return [{"memory": src.memory_id, "id": row["id"]}, *parse_origin(row.get("origin"))]

    def _blob(self, src: Source, blob_id: str) -> str:
        if not blob_id:
            return ""
        data = src.blobs.get_bytes(blob_id)
        # put_bytes names the bytes by their hash: damaged ones would pass as a new blob.
        digest = hashlib.sha256(data).hexdigest()
        if digest != blob_id:
            raise MergeError(
                f"blob {blob_id} of {src.label} is damaged (its content hashes to {digest}); "
                f"run `kgagent memory check --memory {shell_word(src.label)}`"
            )
        return self.m.blobs.put_bytes(data)

    # ---------------------------------------------------------------- fold
    def fold(self, src: Source) -> None:
        """Fold every node, edge and statistic of ``src`` into the memory."""
        self.say(
            f"merging {src.label}: {len(src.rows['states'])} states, "
            f"{len(src.rows['skills'])} skills, {len(src.rows['objects'])} objects"
        )
        fresh: dict[str, set[str]] = {k: set() for k in KINDS}  # source ids folded this time
        maps: dict[str, dict[str, str]] = {k: {} for k in KINDS}  # source id -> memory id
        self._objects(src, maps["Object"], fresh["Object"])
        self._skills(src, maps, fresh["Skill"])
        self._clusters(src, maps, fresh["SkillCluster"])
        self._states(src, maps, fresh["State"])
        self._state_objects(src, maps, fresh)
        self._skill_edges(src, maps, fresh)
        if src.memory_id not in self.merged_before:
            self._input_stats(src)
        self._record(src)

    def _record(self, src: Source) -> None:
        """The manifest's list of merged memories (read by later merges: input statistics)."""
        merged = list(self.m.manifest.get("merged") or [])
        have = {m.get("memory") for m in merged}
        now = time.time()
        for mid in (src.memory_id, *src.merged):
            if mid not in have and mid != self.own:
                merged.append({"memory": mid, "at": now})
                have.add(mid)
                self.counts["memories_recorded"] += 1
        self.m.manifest["merged"] = merged
        self.merged_before |= have

    # ------------------------------------------------------------- objects
    def _objects(self, src: Source, omap: dict[str, str], fresh: set[str]) -> None:
        """Each source object, in creation order, becomes the memory's object of the same
        look (merged) or a new one; a chunk of them is one statement to create and one to
        fold, and a new object's crop is the source's file, copied as it is."""
        todo: list[dict[str, Any]] = []
        for o in sorted(src.rows["objects"], key=lambda r: (r["created_at"], r["id"])):
            hit = self._already("Object", src, o)
            if hit is not None:
                omap[o["id"]] = hit
                self.counts["objects_already_merged"] += 1
            else:
                todo.append(o)
        for at in range(0, len(todo), OBJECT_CHUNK):
            self._object_chunk(src, todo[at : at + OBJECT_CHUNK], omap, fresh)

    def _object_chunk(
        self, src: Source, chunk: list[dict[str, Any]], omap: dict[str, str], fresh: set[str]
    ) -> None:
        rows = self.rows["Object"]
        objs = self.m.upsert_objects(
            [
                (
                    None,
                    (int(o["x"]), int(o["y"]), int(o["w"]), int(o["h"])),
                    int(o["phash"], 16),
                    o["label"] or "",  # text keeps look-alike controls apart (objects.py)
                )
                for o in chunk
            ],
            names=[o["name"] for o in chunk],
            blob_of=lambda i: self._blob(src, chunk[i]["crop"]),
        )
        folded: dict[str, dict[str, Any]] = {}
        for o, obj in zip(chunk, objs, strict=True):
            origin = self._origin_of(src, o)
            if obj.created:
                row = {
                    "crop": obj.crop_blob,
                    "created_at": o["created_at"],
                    "label": o["label"] or "",
                }
                self.counts["objects_created"] += 1
            else:
                old = rows[obj.id]
                row = {
                    "crop": old["crop"],
                    "created_at": min(old["created_at"], o["created_at"]),
                    "label": old["label"] or o["label"] or "",
                }
                origin = parse_origin(old.get("origin")) + origin
                self.counts["objects_merged"] += 1
            row["origin"] = join_origin(origin)
            rows[obj.id] = {**rows.get(obj.id, {}), "id": obj.id, **row}
            folded[obj.id] = row
            self._remember("Object", obj.id, self._origin_of(src, o))
            omap[o["id"]] = obj.id
            fresh.add(o["id"])
        self.m.run_named(
            "merge_object_fold_rows",
            {"rows": [{"id": oid, **row} for oid, row in folded.items()]},
            write=True,
        )

    # -------------------------------------------------------------- skills
    def _skills(self, src: Source, maps: dict[str, dict[str, str]], fresh: set[str]) -> None:
        omap, kmap = maps["Object"], maps["Skill"]
        by_ops: dict[str, str] = {}
        for k in sorted(self.m.skills(), key=lambda s: STATUS_RANK[s.status] == 0):
            by_ops.setdefault(operations_identity(k.operations), k.id)
        created: list[tuple[dict[str, Any], str]] = []
        reweigh: set[str] = set()
        for k in sorted(src.rows["skills"], key=lambda r: (r["created_at"], r["id"])):
            hit = self._already("Skill", src, k)
            if hit is not None:
                kmap[k["id"]] = hit
                self.counts["skills_already_merged"] += 1
                continue
            ops = [
                replace(
                    op,
                    object_id=omap.get(op.object_id, op.object_id) if op.object_id else None,
                    object_id2=omap.get(op.object_id2, op.object_id2) if op.object_id2 else None,
                )
                for op in Skill.parse_operations(k["operations"])
            ]
            same = by_ops.get(operations_identity(ops))
            if same is None:
                skill = self.m.add_skill(k["name"], k["description"], ops)
                by_ops[operations_identity(ops)] = skill.id
                skill.fitness, skill.executions = float(k["fitness"]), int(k["executions"])
                skill.status = k["status"]
                skill.failures, skill.low_rewards = int(k["failures"]), int(k["low_rewards"])
                self.m.update_skill(skill)
                if skill.status != "pruned":
                    self.m.link_skill_objects(skill.id, skill.object_ids())
                # Provenance now: a later skill of this source may merge into this one.
                self._fold_skill(
                    skill.id, k["created_at"], "", join_origin(self._origin_of(src, k))
                )
                created.append((k, skill.id))
                self.counts["skills_created"] += 1
                kmap[k["id"]] = skill.id
            else:
                self._merge_skill(k, same, src)
                reweigh.add(same)
                kmap[k["id"]] = same
            self._remember("Skill", kmap[k["id"]], self._origin_of(src, k))
            fresh.add(k["id"])
        for k, sid in created:  # parents may come later in creation order
            parent = kmap.get(k["parent_id"] or "", "")
            if parent:
                row = self.rows["Skill"][sid]
                self._fold_skill(sid, row["created_at"], parent, row["origin"])
        alpha, c0 = self.m.config.memory.alpha, self.m.config.memory.c0
        for sid in sorted(reweigh):
            fit = fitness_term(self.m.get_skill(sid).fitness, alpha, c0)
            self.m.run_named(
                "merge_skill_reweigh", {"skill": sid, "alpha": alpha, "fit_term": fit}, write=True
            )

    def _merge_skill(self, k: dict[str, Any], sid: str, src: Source) -> None:
        cur = self.m.get_skill(sid)
        n_a, n_b = cur.executions, int(k["executions"])
        if n_a + n_b:
            cur.fitness = (cur.fitness * n_a + float(k["fitness"]) * n_b) / (n_a + n_b)
        else:
            cur.fitness = (cur.fitness + float(k["fitness"])) / 2
        cur.executions = n_a + n_b
        was_pruned = cur.status == "pruned"
        cur.status = max(cur.status, k["status"], key=lambda s: STATUS_RANK.get(s, 0))
        cur.failures = min(cur.failures, int(k["failures"]))
        cur.low_rewards = min(cur.low_rewards, int(k["low_rewards"]))
        self.m.update_skill(cur)
        if was_pruned and cur.status != "pruned":  # pruning dropped its links
            self.m.link_skill_objects(sid, cur.object_ids())
        old = self.rows["Skill"].get(sid, {})
        origin = join_origin(parse_origin(old.get("origin")), self._origin_of(src, k))
        created_at = min(float(old.get("created_at", k["created_at"])), float(k["created_at"]))
        self._fold_skill(sid, created_at, old.get("parent_id") or "", origin)
        self.counts["skills_merged"] += 1

    def _fold_skill(self, sid: str, created_at: float, parent: str, origin: str) -> None:
        row = {"created_at": float(created_at), "parent_id": parent, "origin": origin}
        self.m.run_named("merge_skill_fold", {"skill": sid, **row}, write=True)
        self.rows["Skill"][sid] = {**self.rows["Skill"].get(sid, {}), "id": sid, **row}

    # ------------------------------------------------------------ clusters
    def _clusters(self, src: Source, maps: dict[str, dict[str, str]], fresh: set[str]) -> None:
        kmap, cmap = maps["Skill"], maps["SkillCluster"]
        cluster_of = {k: c.id for c in self.m.clusters() for k in c.skill_ids}
        members: dict[str, list[str]] = {}
        for r in src.rows["member_of"]:
            if r["src"] in kmap:
                members.setdefault(r["dst"], []).append(kmap[r["src"]])
        rows = self.rows["SkillCluster"]
        for c in sorted(src.rows["clusters"], key=lambda r: r["id"]):
            hit = self._already("SkillCluster", src, c)
            if hit is not None:
                cmap[c["id"]] = hit
                self.counts["clusters_already_merged"] += 1
                continue
            mine = sorted(set(members.get(c["id"], [])))
            overlap = Counter(cluster_of[k] for k in mine if k in cluster_of)
            origin = self._origin_of(src, c)
            if overlap:
                cid = min(overlap, key=lambda x: (-overlap[x], x))
                old = rows[cid]
                selections = int(old["selections"]) + int(c["selections"])
                origin = parse_origin(old.get("origin")) + origin
                self.counts["clusters_merged"] += 1
            else:
                cid = self.m.add_cluster(c["name"], c["description"]).id
                selections = int(c["selections"])
                self.counts["clusters_created"] += 1
            for k in mine:
                if k not in cluster_of:
                    self.m.add_to_cluster(k, cid)
                    cluster_of[k] = cid
            row = {"selections": selections, "origin": join_origin(origin)}
            self.m.run_named("merge_cluster_fold", {"cluster": cid, **row}, write=True)
            rows[cid] = {**rows.get(cid, {}), "id": cid, **row}
            self._remember("SkillCluster", cid, self._origin_of(src, c))
            cmap[c["id"]] = cid
            fresh.add(c["id"])

    # -------------------------------------------------------------- states
    def _states(self, src: Source, maps: dict[str, dict[str, str]], fresh: set[str]) -> None:
        smap = maps["State"]
        rows = self.rows["State"]
        isolated = not self.m.config.memory.similarity_edges
        todo = sorted(src.rows["states"], key=lambda r: r["id"])
        for i, s in enumerate(todo, 1):
            if i % PROGRESS_EVERY == 0:
                self.say(f"  states {i}/{len(todo)}")
            hit = self._already("State", src, s)
            if hit is not None:
                smap[s["id"]] = hit
                self.counts["states_already_merged"] += 1
                continue
            h = self.m.merge_or_create_state(src.vectors[s["id"]], isolated=isolated)
            stats = remap_stats(s.get("mcts") or "", maps)
            origin = self._origin_of(src, s)
            if h.created:
                row = {
                    "visits": int(s["visits"]),
                    "first_seen": float(s["first_seen"]),
                    "last_seen": float(s["last_seen"]),
                    "thumbnail": self._blob(src, s["thumbnail"] or ""),
                    "mcts": stats,
                }
                self.counts["states_created"] += 1
            else:
                old = rows[h.id]
                row = {
                    "visits": int(old["visits"]) + int(s["visits"]),
                    "first_seen": min(float(old["first_seen"]), float(s["first_seen"])),
                    "last_seen": max(float(old["last_seen"]), float(s["last_seen"])),
                    "thumbnail": old["thumbnail"] or self._blob(src, s["thumbnail"] or ""),
                    "mcts": combine_stats(old.get("mcts") or "", stats),
                }
                origin = parse_origin(old.get("origin")) + origin
                self.counts["states_merged"] += 1
            row["origin"] = join_origin(origin)
            self.m.run_named("merge_state_fold", {"state": h.id, **row}, write=True)
            rows[h.id] = {**rows.get(h.id, {}), "id": h.id, **row}
            self._remember("State", h.id, self._origin_of(src, s))
            smap[s["id"]] = h.id
            fresh.add(s["id"])

    def _state_objects(
        self, src: Source, maps: dict[str, dict[str, str]], fresh: dict[str, set[str]]
    ) -> None:
        smap, omap = maps["State"], maps["Object"]
        links: dict[str, list[str]] = {}
        for r in src.rows["has_object"]:
            if r["src"] not in fresh["State"] and r["dst"] not in fresh["Object"]:
                continue  # both already merged: the link came with them
            if r["src"] in smap and r["dst"] in omap:
                links.setdefault(smap[r["src"]], []).append(omap[r["dst"]])
        for sid, oids in links.items():
            self.m.link_state_objects(sid, sorted(set(oids)))
            self.counts["state_object_links"] += len(set(oids))

    # --------------------------------------------------------- skill edges
    def _skill_edges(
        self, src: Source, maps: dict[str, dict[str, str]], fresh: dict[str, set[str]]
    ) -> None:
        smap, kmap = maps["State"], maps["Skill"]
        have = {
            (r["src"], r["dst"], r["skill"]): r
            for r in self.m.run_named("archive_export_skill_edge")
        }
        for e in src.rows["skill_edges"]:
            if not ({e["src"], e["dst"]} & fresh["State"] or e["skill"] in fresh["Skill"]):
                continue  # every end already merged: the edge came with them
            a, b, k = smap.get(e["src"]), smap.get(e["dst"]), kmap.get(e["skill"])
            if a is None or b is None or k is None:
                raise MergeError(
                    f"{src.label} has a skill edge of an unknown state or skill ({e['skill']}); "
                    "run `kgagent memory check` on it"
                )
            skill = self.m.get_skill(k)
            if skill.status == "pruned":
                continue  # a pruned skill keeps no edges
            old = have.get((a, b, k))
            n_b = int(e["count"])
            if old is None:
                count, change, r_total, updated = (
                    n_b,
                    float(e["change"]),
                    e["r_total"],
                    e["updated"],
                )
                query = "merge_skill_edge_create"
                self.counts["skill_edges_created"] += 1
            else:
                n_a = int(old["count"])
                count = n_a + n_b
                change = (float(old["change"]) * n_a + float(e["change"]) * n_b) / max(count, 1)
                later = e if float(e["updated"]) > float(old["updated"]) else old
                r_total, updated = later["r_total"], later["updated"]
                query = "merge_skill_edge_set"
                self.counts["skill_edges_merged"] += 1
            weight = self.m.skill_edge_weight(change, skill.fitness)
            params = {
                "src": a,
                "dst": b,
                "skill": k,
                "weight": float(weight),
                "change": float(change),
                "count": int(count),
                "r_total": float(r_total),
                "updated": float(updated),
            }
            self.m.run_named(query, params, write=True)
            have[(a, b, k)] = params

    # ------------------------------------------------------ input statistics
    def _input_stats(self, src: Source) -> None:
        for r in src.rows["input_stats"]:
            params = {
                "key": r["key"],
                "kind": r["kind"],
                "tried": int(r["tried"]),
                "changed": int(r["changed"]),
                "updated": float(r["updated"]),
            }
            self.m.run_named("merge_input_stat_add", params, write=True)
            self.counts["input_stats"] += 1
