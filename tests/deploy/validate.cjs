#!/usr/bin/env node
// Validates deploy/ offline, as far as an API server would before accepting it:
//
//   node validate.cjs DIR...
//
// DIR holds a kustomization.yaml (its resources are read, in order) or plain *.yaml files. Every
// object must be of a kind this validator knows: Kubernetes' own kinds are checked against the
// OpenAPI schema of the release kubernetes-models carries (pinned by package-lock.json), the
// CSI-Addons kinds against tests/deploy/schemas/. On top of the schemas, what the API server or
// the kubelet would reject and a schema cannot see: a workload whose selector does not match its
// pod labels, a mount of a volume the pod does not declare, a $(VAR) in args that no env var
// defines (the kubelet would pass it on literally), a ConfigMap or ServiceAccount that is not in
// the set, a conflist that is not JSON, and a kustomization whose images name no container.
//
// Prints one line per object checked and a count; exits 1 after listing every problem
// ("FILE: Kind/name: where: what").
"use strict";

const fs = require("fs");
const path = require("path");
const YAML = require("yaml");
const Ajv = require("ajv");

const problems = [];
const problem = (file, obj, where, what) =>
  problems.push(`${file}: ${obj ? `${obj.kind}/${obj.metadata?.name}` : "-"}: ${where}: ${what}`);

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

// A ConfigMap key named *.conflist or *.json holds a document the programs parse.
function checkConfigMap(file, obj) {
  for (const [key, text] of Object.entries(obj.data ?? {})) {
    if (!key.endsWith(".conflist") && !key.endsWith(".json")) continue;
    // mizarmp-addons reads its JSON with // comments allowed; a conflist has none.
    const json = key.endsWith(".json") ? text.replace(/^\s*\/\/.*$/gm, "") : text;
    try {
      const doc = JSON.parse(json);
      if (key.endsWith(".conflist") && !doc.plugins?.some((p) => p.type === "mizarmp")) {
        problem(file, obj, `data.${key}`, "a conflist without a mizarmp plugin");
      }
    } catch (e) {
      problem(file, obj, `data.${key}`, `not JSON: ${e.message}`);
    }
  }
}

// ------------------------------------------------------------------------------------- loading

function readObjects(file) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  const out = [];
  for (const doc of docs) {
    if (doc.errors.length) {
      doc.errors.forEach((e) => problem(file, null, "YAML", e.message));
      continue;
    }
    const obj = doc.toJS();
    if (obj !== null) out.push(obj);
  }
  return out;
}

// The files of DIR: its kustomization's resources (each must exist), or its *.yaml files.
function filesOf(dir) {
  const kustomization = path.join(dir, "kustomization.yaml");
  if (!fs.existsSync(kustomization)) {
    return { files: fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort().map((f) => path.join(dir, f)) };
  }
  const k = YAML.parse(fs.readFileSync(kustomization, "utf8"));
  const files = [];
  for (const r of k.resources ?? []) {
    const file = path.join(dir, r);
    if (fs.existsSync(file)) files.push(file);
    else problem(kustomization, null, "resources", `${r} does not exist`);
  }
  return { files, kustomization, images: k.images ?? [] };
}

function checkImages(kustomization, images, objects) {
  const used = new Set();
  for (const { obj } of objects) {
    const pod = podSpecOf(obj);
    for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
      used.add(c.image.replace(/[:@].*$/, ""));
    }
  }
  for (const image of images) {
    if (!used.has(image.name)) problem(kustomization, null, "images", `${image.name} names no container image`);
  }
}

function main(dirs) {
  let count = 0;
  for (const dir of dirs) {
    const { files, kustomization, images } = filesOf(dir);
    const objects = files.flatMap((file) => readObjects(file).map((obj) => ({ file, obj })));
    const names = new Set(objects.map(({ obj }) => `${obj.kind}/${obj.metadata?.name}`));
    for (const { file, obj } of objects) {
      validateSchema(file, obj);
      const pod = podSpecOf(obj);
      if (pod) {
        checkSelector(file, obj);
        checkContainers(file, obj, pod);
        checkReferences(file, obj, pod, names);
      }
      if (obj.kind === "ConfigMap") checkConfigMap(file, obj);
      console.log(`checked ${obj.apiVersion} ${obj.kind}/${obj.metadata?.name} (${path.relative(process.cwd(), file)})`);
      count++;
    }
    if (kustomization) checkImages(kustomization, images, objects);
  }
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
