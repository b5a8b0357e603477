// SPDX-License-Identifier: Apache-2.0
// netns.js - a small cluster on one machine, for the tests of controllers:
// a "cluster" network namespace, and "nodes", each with network, pid and
// mount namespaces of its own (its own address, its own processes, its own
// /proc) joined to the cluster namespace by a veth pair. Nothing of it is
// on the host's network: the addresses are private to these namespaces.
// Pods are cgroups as the kubelet names them (systemd driver, containerd),
// made on the host's cgroup v2 hierarchy and removed at the end, with the
// kubepods levels above them when they were made for them.
// Needs root, iproute2, unshare and nsenter (util-linux).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');
const h = require('./harness');

function must(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 20000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error || r.stderr}`);
  return r.stdout;
}

// A process holding namespaces: the pid of what runs inside (nsenter's target).
async function holder(args) {
  const c = new h.Child('unshare', [...args, 'sleep', 'infinity']);
  const inner = () => { // with --fork, unshare's child: pid 1 of the new pid namespace
    try {
      return Number(fs.readFileSync(`/proc/${c.pid}/task/${c.pid}/children`, 'utf8').split(' ')[0]);
    } catch {
      return 0;
    }
  };
  // Made once its network namespace is no longer ours: unshare's pid is
  // there before unshare(2) ran, and an nsenter into it then would act on
  // this namespace (a loopback set up in the wrong place).
  const netOf = (p) => {
    try {
      return fs.readlinkSync(`/proc/${p}/ns/net`);
    } catch {
      return '';
    }
  };
  const own = netOf('self');
  const pid = await h.until(() => {
    const p = args.includes('--fork') ? inner() : c.pid;
    const net = p ? netOf(p) : '';
    return net && net !== own ? p : 0;
  }, { what: 'the namespaces to be made' });
  return { child: c, pid };
}

// The cgroup v2 hierarchy's mount point (/sys/fs/cgroup, or .../unified
// on a hybrid host).
function cgroup2() {
  for (const l of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = l.split(' ');
    const dash = f.indexOf('-');
    if (dash > 0 && f[dash + 1] === 'cgroup2') return f[4];
  }
  throw new Error('no cgroup v2 hierarchy mounted');
}

// Whether the cgroup dir has cgroups below it.
const below = (dir) => fs.readdirSync(dir, { withFileTypes: true }).some((d) => d.isDirectory());

class Cluster {
  // The cluster namespace; tag names its links (unique per test file).
  static async create(tag = `pc${process.pid}`) {
    const c = new Cluster();
    c.tag = tag.slice(0, 10);
    c.net = await holder(['--net']);
    c.nodes = [];
    c.cgroups = [];
    c.run(['ip', 'link', 'set', 'lo', 'up']);
    return c;
  }

  // A command's argv prefix: in the cluster namespace (a controller's place).
  prefix() {
    return ['nsenter', '-t', String(this.net.pid), '-n', '--'];
  }

  run(argv) {
    return must('nsenter', ['-t', String(this.net.pid), '-n', '--', ...argv]);
  }

  // Node i (from 1): 10.77.i.2 in its namespaces, reached from the
  // cluster's 10.77.i.1.
  async node(name) {
    const i = this.nodes.length + 1;
    const ns = await holder(['--net', '--pid', '--mount', '--fork', '--kill-child', '--mount-proc', '--propagation', 'private']);
    const outer = `${this.tag}n${i}`;
    const inner = `${this.tag}i${i}`;
    must('ip', ['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
    must('ip', ['link', 'set', outer, 'netns', String(this.net.pid)]);
    must('ip', ['link', 'set', inner, 'netns', String(ns.pid)]);
    this.run(['ip', 'addr', 'add', `10.77.${i}.1/24`, 'dev', outer]);
    this.run(['ip', 'link', 'set', outer, 'up']);
    const n = new Node(name, ns, `10.77.${i}.2`);
    n.run(['ip', 'link', 'set', inner, 'name', 'eth0']);
    n.run(['ip', 'addr', 'add', `${n.ip}/24`, 'dev', 'eth0']);
    n.run(['ip', 'link', 'set', 'eth0', 'up']);
    n.run(['ip', 'link', 'set', 'lo', 'up']);
    n.cluster = this;
    this.nodes.push(n);
    return n;
  }

  // A pod: its UID (random, or one given: a static pod's is its
  // manifest's hash, 32 hex), and the cgroup of each container (by its
  // 64-hex ID: random, or one given).
  pod(name, uid = crypto.randomUUID()) {
    const dir = path.join(cgroup2(), 'kubepods.slice', 'kubepods-besteffort.slice',
      `kubepods-besteffort-pod${uid.replace(/-/g, '_')}.slice`);
    const pod = { name, uid, containers: [] };
    pod.container = (id = crypto.randomBytes(32).toString('hex')) => {
      const cg = path.join(dir, `cri-containerd-${id}.scope`);
      // Each level this makes is this cluster's to remove; so are the
      // kubepods levels it finds, when it leaves them empty: another test
      // (a cluster, docs.sh's walk-through) may have made them and left
      // while this one was in them. Any other level that was there stays.
      let at = cgroup2();
      for (const part of path.relative(at, cg).split(path.sep)) {
        at = path.join(at, part);
        try {
          fs.mkdirSync(at);
          this.cgroups.push(at);
        } catch (e) {
          if (e.code !== 'EEXIST') throw e;
          if (/^kubepods(-besteffort)?\.slice$/.test(part) && !this.cgroups.includes(at)) this.cgroups.push(at);
        }
      }
      pod.containers.push(id);
      return { id, cgroup: cg };
    };
    return pod;
  }

  // Everything in the namespaces is killed (each node's pid 1 goes, and
  // the kernel kills the rest), then every cgroup this cluster made is
  // removed, the deepest first: the containers' (EBUSY while their
  // processes are still exiting), the pods', then kubepods.slice and
  // kubepods-besteffort.slice, whoever made them (ENOTEMPTY, or EBUSY with
  // cgroups below it: another test's pods are in there still; the last
  // to leave removes them).
  // Its list: what it made and did not remove (empty: nothing left).
  async destroy() {
    for (const n of this.nodes) await n.ns.child.kill('SIGKILL');
    await this.net.child.kill('SIGKILL');
    const left = [];
    for (const cg of this.cgroups.reverse()) {
      await h.until(() => {
        try {
          fs.rmdirSync(cg);
          return true;
        } catch (e) {
          if (e.code === 'ENOENT') return true;
          // cgroup v2 says EBUSY, not ENOTEMPTY, for a level with cgroups below it.
          if ((e.code === 'ENOTEMPTY' || (e.code === 'EBUSY' && below(cg))) && path.basename(cg).startsWith('kubepods') &&
              !cg.includes('-pod')) {
            left.push(cg);
            return true;
          }
          throw e;
        }
      }, { what: `${cg} to be removed` });
    }
    this.cgroups = [];
    return left;
  }
}

class Node {
  constructor(name, ns, ip) {
    this.name = name;
    this.ns = ns;
    this.ip = ip;
  }

  // A command's argv prefix: in this node's namespaces (nsenter forks it
  // into the pid namespace, and ends as it ends).
  prefix() {
    return ['nsenter', '-t', String(this.ns.pid), '-n', '-p', '-m', '--'];
  }

  run(argv) {
    return must('nsenter', ['-t', String(this.ns.pid), '-n', '-p', '-m', '--', ...argv]);
  }

  // An echo client of consumer in a container's cgroup on this node, once
  // it said it started; .nspid: its pid as the node (and its daemon) see it.
  async echo(consumer, container) {
    const e = new h.Child('sh', ['-c', 'echo $$ > "$1/cgroup.procs" && exec "$2" --consumer "$3"', 'sh',
      container.cgroup, h.ECHO_CLIENT, consumer], { prefix: this.prefix() });
    const line = await e.line(/event=started pid=\d+/, { out: true });
    e.nspid = Number(/pid=(\d+)/.exec(line)[1]);
    return e;
  }
}

module.exports = { Cluster, cgroup2 };
