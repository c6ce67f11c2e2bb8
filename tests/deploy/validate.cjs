#!/usr/bin/env node
// Validates deploy/ offline, as far as an API server would before accepting it:
//
//   node validate.cjs DIR...
//
// DIR holds a kustomization.yaml (rendered by `kubectl kustomize DIR`, as `kubectl apply -k` does)
// or plain *.yaml files. Every object must be of a kind this validator knows (an unknown kind is a
// problem, not a pass): Kubernetes' own kinds are checked against the OpenAPI schema of the
// release kubernetes-models carries (Kubernetes 1.27.1 in 4.5.1, pinned by package-lock.json),
// the CSI-Addons kinds against tests/deploy/schemas/. On top of the schemas, what the API server or
// the kubelet would reject and a schema cannot see: a workload whose selector does not match its
// pod labels, a mount of a volume the pod does not declare, a $(VAR) in args that no env var
// defines (the kubelet would pass it on literally), a container without an image, a ConfigMap or
// ServiceAccount that is not in the set, a conflist that is not JSON, a csi-addons sidecar that
// dials another socket than its server's endpoint or one on no volume they share, a fence class
// or fence naming a driver no server config of the run carries, a PodMonitor selecting no pod or
// a port its pods do not name, and a kustomization whose images name no container. And what an
// operator relies on during updates and drains: a Deployment's rolling update keeps all but one
// replica, a PodDisruptionBudget selecting its pods lets exactly one be evicted at a time, and a
// DaemonSet updates itself (RollingUpdate), without a surge for a hostNetwork pod.
//
// Prints one line per object checked and a count; exits 1 after listing every problem
// ("FILE: Kind/name: where: what").
"use strict";

const { execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");
const Ajv = require("ajv");

const identity = (obj) => `${obj.kind}/${obj.metadata?.name}`;
const problems = [];
const problem = (file, obj, where, what) =>
  problems.push(`${file}: ${obj ? identity(obj) : "-"}: ${where}: ${what}`);

// ------------------------------------------------------------------------------------- schemas

// "apps/v1" -> "kubernetes-models/apps/v1"; "v1" -> "kubernetes-models/v1".
function kubernetesModel(apiVersion, kind) {
  try {
    return require(`kubernetes-models/${apiVersion}`)[kind] ?? null;
  } catch {
    return null;
  }
}

const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const schemaDir = path.join(__dirname, "schemas");
ajv.addSchema(JSON.parse(fs.readFileSync(path.join(schemaDir, "metadata.json"), "utf8")));
function crdValidator(apiVersion, kind) {
  const file = path.join(schemaDir, `${apiVersion.replace("/", "_")}_${kind}.json`);
  return fs.existsSync(file) ? ajv.compile(JSON.parse(fs.readFileSync(file, "utf8"))) : null;
}

function validateSchema(file, obj) {
  const Model = kubernetesModel(obj.apiVersion, obj.kind);
  if (Model) {
    try {
      new Model(obj).validate();
    } catch (e) {
      for (const err of e.errors ?? [{ instancePath: "", message: e.message }]) {
        problem(file, obj, err.instancePath || "/", err.message);
      }
    }
    return;
  }
  const validate = crdValidator(obj.apiVersion, obj.kind);
  if (!validate) {
    problem(file, obj, "apiVersion/kind", `unknown kind ${obj.apiVersion} ${obj.kind}`);
  } else if (!validate(obj)) {
    for (const err of validate.errors) {
      const detail = err.params?.allowedValues ? ` (${err.params.allowedValues.join(", ")})` : "";
      problem(file, obj, err.instancePath || "/", err.message + detail);
    }
  }
}

// ------------------------------------------------------------------ what a schema cannot see

function podSpecOf(obj) {
  return ["DaemonSet", "Deployment", "StatefulSet", "Job"].includes(obj.kind)
    ? obj.spec?.template?.spec
    : null;
}

function checkSelector(file, obj) {
  const selector = obj.spec?.selector?.matchLabels ?? {};
  const labels = obj.spec?.template?.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(selector)) {
    if (labels[key] !== value) {
      problem(file, obj, "/spec/selector", `matchLabels ${key}=${value} is not a pod label`);
    }
  }
}

function checkContainers(file, obj, pod) {
  const volumes = new Set((pod.volumes ?? []).map((v) => v.name));
  const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  containers.forEach((c) => {
    const where = `container ${c.name}`;
    // Optional in the schema (a pod template may leave it to a controller); the API server
    // refuses a pod without it.
    if (!c.image) problem(file, obj, where, "no image");
    for (const m of c.volumeMounts ?? []) {
      if (!volumes.has(m.name)) problem(file, obj, where, `mounts undeclared volume ${m.name}`);
    }
    const env = new Set((c.env ?? []).map((e) => e.name));
    for (const arg of [...(c.command ?? []), ...(c.args ?? [])]) {
      for (const [, name] of String(arg).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
        if (!env.has(name)) problem(file, obj, where, `$(${name}) in "${arg}" is no env var`);
      }
    }
  });
}

// References to objects of the set (Secrets are the operator's to create, so not checked).
function checkReferences(file, obj, pod, names) {
  const sa = pod.serviceAccountName;
  if (sa && !names.has(`ServiceAccount/${sa}`)) {
    problem(file, obj, "serviceAccountName", `no ServiceAccount ${sa} in the set`);
  }
  for (const v of pod.volumes ?? []) {
    if (v.configMap && !names.has(`ConfigMap/${v.configMap.name}`)) {
      problem(file, obj, `volume ${v.name}`, `no ConfigMap ${v.configMap.name} in the set`);
    }
  }
}

// A config file's document: mizarmp-addons reads its *.json with // comments allowed; a conflist
// has none. Throws what JSON.parse throws.
function parseConfig(key, text) {
  return JSON.parse(key.endsWith(".json") ? text.replace(/^\s*\/\/.*$/gm, "") : text);
}

// A ConfigMap key named *.conflist or *.json holds a document the programs parse.
function checkConfigMap(file, obj) {
  for (const [key, text] of Object.entries(obj.data ?? {})) {
    if (!key.endsWith(".conflist") && !key.endsWith(".json")) continue;
    try {
      const doc = parseConfig(key, text);
      if (key.endsWith(".conflist") && !doc.plugins?.some((p) => p.type === "mizarmp")) {
        problem(file, obj, `data.${key}`, "a conflist without a mizarmp plugin");
      }
    } catch (e) {
      problem(file, obj, `data.${key}`, `not JSON: ${e.message}`);
    }
  }
}

// The value of a container's --FLAG=VALUE argument, its $(VAR)s replaced by the container's
// literal env values; undefined without one.
function argValue(container, flag) {
  const arg = (container.args ?? []).find((a) => String(a).startsWith(`${flag}=`));
  if (arg === undefined) return undefined;
  const env = new Map((container.env ?? []).map((e) => [e.name, e.value]));
  const expand = (reference, name) => env.get(name) ?? reference;
  return arg.slice(flag.length + 1).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, expand);
}

// The container's mount that holds the path TARGET (the deepest), or undefined.
const mountDir = (mount) => mount.mountPath.replace(/\/$/, "");
function mountHolding(container, target) {
  return (container.volumeMounts ?? [])
    .filter((m) => target.startsWith(`${mountDir(m)}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
}

// The document of the file a container reads at FILE from a ConfigMap volume of the set, or null.
function configFileOf(pod, container, file, configMaps) {
  const mount = mountHolding(container, file);
  if (!mount) return null;
  const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
  const key = file.slice(mountDir(mount).length + 1);
  const text = configMaps.get(volume?.configMap?.name)?.data?.[key];
  if (text === undefined) return null;
  try {
    return parseConfig(file, text);
  } catch {
    return null; // checkConfigMap reports it
  }
}

// mizarmp-addons and its csi-addons sidecar meet at one socket: the server's "endpoint" (from
// its --config file) must be what the sidecar dials (--csi-addons-address), on a volume both
// containers mount at the same path, and the sidecar must run as the server's uid: the socket
// is 0600 in the server's own 0700 directory, which only their owner reaches without
// CAP_DAC_OVERRIDE. Otherwise the sidecar's first Probe fails and it exits.
function checkSidecarSocket(file, obj, pod, configMaps) {
  const containers = pod.containers ?? [];
  const sidecar = containers.find((c) => argValue(c, "--csi-addons-address") !== undefined);
  const server = containers.find((c) => argValue(c, "--config") !== undefined);
  if (!sidecar || !server) return;
  const config = configFileOf(pod, server, argValue(server, "--config"), configMaps);
  if (!config) {
    const what = `--config ${argValue(server, "--config")} is no JSON file of a ConfigMap`;
    problem(file, obj, `container ${server.name}`, `${what} in the set`);
    return;
  }
  const socket = (uri) => String(uri).replace(/^unix:\/\//, "");
  const dialed = socket(argValue(sidecar, "--csi-addons-address"));
  const where = `container ${sidecar.name}`;
  if (dialed !== socket(config.endpoint)) {
    problem(file, obj, where, `dials ${dialed}, but the server's endpoint is ${config.endpoint}`);
  }
  const [a, b] = [mountHolding(server, dialed), mountHolding(sidecar, dialed)];
  if (!a || !b || a.name !== b.name || a.mountPath !== b.mountPath) {
    problem(file, obj, where, `socket ${dialed} is on no volume both containers mount at one path`);
  }
  // Neither image names a USER: root unless the pod or the container says otherwise.
  const uid = (c) => c.securityContext?.runAsUser ?? pod.securityContext?.runAsUser ?? 0;
  if (uid(sidecar) !== uid(server)) {
    const why = "only the owner of the server's 0600 socket in its 0700 directory reaches it";
    problem(file, obj, where, `runs as uid ${uid(sidecar)}, the server as uid ${uid(server)}: ${why}`);
  }
}

// The driver names the mizarmp-addons configs (ConfigMap *.json with a "mode") of the run carry.
function driverNamesOf(objects) {
  const names = new Set();
  for (const { obj } of objects.filter(({ obj }) => obj.kind === "ConfigMap")) {
    for (const [key, text] of Object.entries(obj.data ?? {})) {
      if (!key.endsWith(".json")) continue;
      try {
        const doc = parseConfig(key, text);
        if (doc.mode && doc.drivername) names.add(doc.drivername);
      } catch {
        // checkConfigMap reports it
      }
    }
  }
  return names;
}

// The CSI-Addons controller sends a fence to the CSIAddonsNodes of the class's provisioner (or
// the fence's driver): it must be the driver name the servers announce, or nothing serves it.
function checkFenceDrivers(fences, drivers) {
  if (drivers.size === 0) return; // no server config in this run to compare with
  for (const { file, obj } of fences) {
    const [where, name] =
      obj.kind === "NetworkFenceClass"
        ? ["/spec/provisioner", obj.spec?.provisioner]
        : ["/spec/driver", obj.spec?.driver];
    if (name !== undefined && !drivers.has(name)) {
      const known = [...drivers].join(", ");
      problem(file, obj, where, `${name} is no driver name of the server configs (${known})`);
    }
  }
}

// Whether a label selector (matchLabels, matchExpressions) selects LABELS.
function selects(selector, labels) {
  const byLabels = Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector?.matchExpressions ?? []).every(({ key, operator, values }) => {
    const has = key in labels;
    if (operator === "Exists") return has;
    if (operator === "DoesNotExist") return !has;
    return (has && values.includes(labels[key])) === (operator === "In");
  });
  return byLabels && byExpressions;
}

// A PodMonitor scrapes the named container port of the pods it selects: selecting no pod of the
// run, or a pod without that port name, leaves Prometheus with no target and no error.
function checkPodMonitors(monitors, objects) {
  const pods = objects.filter(({ obj }) => podSpecOf(obj));
  if (pods.length === 0) return; // no workload in this run to compare with
  for (const { file, obj } of monitors) {
    const labelsOf = (w) => w.spec?.template?.metadata?.labels ?? {};
    const selected = pods.filter(({ obj: w }) => selects(obj.spec?.selector, labelsOf(w)));
    if (selected.length === 0) problem(file, obj, "/spec/selector", "selects no pod of the set");
    for (const { port } of obj.spec?.podMetricsEndpoints ?? []) {
      for (const { obj: w } of selected) {
        const names = (podSpecOf(w).containers ?? []).flatMap((c) => c.ports ?? []);
        if (port && !names.some((p) => p.name === port)) {
          const where = "/spec/podMetricsEndpoints";
          problem(file, obj, where, `${identity(w)} has no port named ${port}`);
        }
      }
    }
  }
}

// ------------------------------------------------------------------- updates and disruptions

// An int-or-percent field scaled to TOTAL pods, as Kubernetes does: a percentage rounded up or
// down as that field is (NaN for neither a number nor "N%").
function scaled(value, total, roundUp) {
  if (typeof value === "number") return value;
  const percent = /^(\d+)%$/.exec(String(value));
  if (!percent) return NaN;
  const exact = (total * Number(percent[1])) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

// During a rolling update a Deployment takes down at most maxUnavailable pods at once (a
// percentage of replicas rounded down; 25% when unset), with Recreate all of them: either
// replica serves fencing, so an update must keep all but one.
function checkRollout(file, obj) {
  const replicas = obj.spec?.replicas ?? 1;
  const strategy = obj.spec?.strategy ?? {};
  if (strategy.type === "Recreate") {
    if (replicas > 1) {
      problem(file, obj, "/spec/strategy", `Recreate stops all ${replicas} replicas at once`);
    }
    return;
  }
  const value = strategy.rollingUpdate?.maxUnavailable ?? "25%";
  const down = scaled(value, replicas, false);
  if (!(down <= 1)) {
    const where = "/spec/strategy/rollingUpdate/maxUnavailable";
    problem(file, obj, where, `${value} lets ${down} of ${replicas} replicas go at once (at most 1)`);
  }
}

// How many of EXPECTED pods a PodDisruptionBudget lets be evicted at once (its percentages
// rounded up, as the disruption controller does); NaN when it sets neither bound.
function disruptionsAllowed(budget, expected) {
  const { maxUnavailable, minAvailable } = budget.spec ?? {};
  if (maxUnavailable !== undefined) return scaled(maxUnavailable, expected, true);
  if (minAvailable !== undefined) return expected - scaled(minAvailable, expected, true);
  return NaN;
}

// A drain evicts pods only as far as the PodDisruptionBudgets selecting them allow. Without one,
// draining the nodes of every replica at once leaves none to fence with; one that allows more
// than one eviction does the same; one that allows none makes every drain of their nodes hang.
function checkDisruptionBudgets(objects) {
  const budgets = objects.filter(({ obj }) => obj.kind === "PodDisruptionBudget");
  for (const { file, obj } of objects.filter(({ obj }) => obj.kind === "Deployment")) {
    const labels = obj.spec?.template?.metadata?.labels ?? {};
    const namespace = obj.metadata?.namespace;
    const covering = budgets.filter(
      ({ obj: b }) => b.metadata?.namespace === namespace && selects(b.spec?.selector, labels),
    );
    if (covering.length === 0) {
      problem(file, obj, "/spec/template/metadata/labels", "no PodDisruptionBudget selects its pods");
    }
    const replicas = obj.spec?.replicas ?? 1;
    for (const { obj: budget } of covering) {
      const allowed = disruptionsAllowed(budget, replicas);
      const what = `lets ${allowed} of its ${replicas} pods be evicted at once`;
      if (Number.isNaN(allowed)) {
        problem(file, obj, identity(budget), "sets neither maxUnavailable nor minAvailable");
      } else if (allowed > 1) {
        problem(file, obj, identity(budget), `${what} (at most 1)`);
      } else if (allowed < 1) {
        problem(file, obj, identity(budget), `${what}: a drain of their nodes never ends`);
      }
    }
  }
}

// A DaemonSet replaces its pods itself only with RollingUpdate (the default; OnDelete waits for
// each old pod to be deleted by hand). A surge starts the new pod on the node beside the old one,
// where a hostNetwork pod finds the host ports and host-path sockets it binds still held.
function checkDaemonSetUpdate(file, obj, pod) {
  const strategy = obj.spec?.updateStrategy ?? {};
  const type = strategy.type ?? "RollingUpdate";
  if (type !== "RollingUpdate") {
    const what = `${type}: a new template reaches no node until its pod is deleted by hand`;
    problem(file, obj, "/spec/updateStrategy/type", what);
    return;
  }
  const surge = strategy.rollingUpdate?.maxSurge ?? 0;
  if (pod.hostNetwork && scaled(surge, 1, true) !== 0) {
    const what = `${surge}: a new hostNetwork pod would start beside the old one on its node`;
    problem(file, obj, "/spec/updateStrategy/rollingUpdate/maxSurge", what);
  }
}

// ------------------------------------------------------------------------------------- loading

function parseObjects(file, text) {
  const out = [];
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors.length) {
      doc.errors.forEach((e) => problem(file, null, "YAML", e.message));
      continue;
    }
    const obj = doc.toJS();
    if (obj !== null) out.push(obj);
  }
  return out;
}

// DIR's *.yaml files but its kustomization, each object with the file it is in.
function rawObjectsOf(dir) {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
    .sort()
    .map((f) => path.join(dir, f))
    .flatMap((file) =>
      parseObjects(file, fs.readFileSync(file, "utf8")).map((obj) => ({ file, obj })),
    );
}

// What `kubectl apply -k DIR` sends: kubectl's own kustomize renders it (so the namespace and
// the image tags are applied, and a kustomization kustomize refuses is refused here too).
function render(kustomization, dir) {
  try {
    const options = { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] };
    return execFileSync("kubectl", ["kustomize", dir], options);
  } catch (e) {
    const why =
      e.code === "ENOENT"
        ? "kubectl not found (scripts/install-deps.sh installs it)"
        : String(e.stderr || e.message).trim();
    problem(kustomization, null, "kubectl kustomize", why);
    return null;
  }
}

// The objects of DIR: rendered from its kustomization.yaml, named by the file each came from;
// or, without one, its *.yaml files as they are.
function objectsOf(dir) {
  const raw = rawObjectsOf(dir);
  const kustomization = path.join(dir, "kustomization.yaml");
  if (!fs.existsSync(kustomization)) return raw;
  const images = YAML.parse(fs.readFileSync(kustomization, "utf8"))?.images ?? [];
  checkImages(kustomization, images, raw);
  const text = render(kustomization, dir);
  if (text === null) return [];
  const origin = new Map(raw.map(({ file, obj }) => [identity(obj), file]));
  return parseObjects(kustomization, text).map((obj) => ({
    file: origin.get(identity(obj)) ?? kustomization,
    obj,
  }));
}

// An `images:` entry that names no container's image would retarget nothing, silently.
function checkImages(kustomization, images, objects) {
  const used = new Set();
  for (const { obj } of objects) {
    const pod = podSpecOf(obj);
    for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
      if (c.image) used.add(c.image.replace(/[:@].*$/, ""));
    }
  }
  for (const image of images) {
    if (!used.has(image.name)) {
      problem(kustomization, null, "images", `${image.name} names no container image`);
    }
  }
}

function main(dirs) {
  let count = 0;
  const all = [];
  for (const dir of dirs) {
    const objects = objectsOf(dir);
    all.push(...objects);
    const names = new Set(objects.map(({ obj }) => identity(obj)));
    const configMaps = new Map(
      objects
        .filter(({ obj }) => obj.kind === "ConfigMap")
        .map(({ obj }) => [obj.metadata?.name, obj]),
    );
    for (const { file, obj } of objects) {
      validateSchema(file, obj);
      const pod = podSpecOf(obj);
      if (pod) {
        checkSelector(file, obj);
        checkContainers(file, obj, pod);
        checkReferences(file, obj, pod, names);
        checkSidecarSocket(file, obj, pod, configMaps);
      }
      if (obj.kind === "Deployment") checkRollout(file, obj);
      if (obj.kind === "DaemonSet") checkDaemonSetUpdate(file, obj, pod);
      if (obj.kind === "ConfigMap") checkConfigMap(file, obj);
      const where = path.relative(process.cwd(), file);
      console.log(`checked ${obj.apiVersion} ${identity(obj)} (${where})`);
      count++;
    }
  }
  const fences = all.filter(({ obj }) => ["NetworkFenceClass", "NetworkFence"].includes(obj.kind));
  checkFenceDrivers(fences, driverNamesOf(all));
  checkPodMonitors(all.filter(({ obj }) => obj.kind === "PodMonitor"), all);
  checkDisruptionBudgets(all);
  if (problems.length) {
    problems.forEach((p) => console.log(`PROBLEM ${p}`));
    console.log(`${problems.length} problem(s) in ${count} object(s)`);
    process.exit(1);
  }
  console.log(`${count} object(s) valid`);
}

if (process.argv.length < 3) {
  console.error("usage: node validate.cjs DIR...");
  process.exit(2);
}
main(process.argv.slice(2));
