'use strict';
// Checks the HAR's ArkTS with ohos-typescript (npm), the TypeScript fork OpenHarmony's ArkTS
// compiler front end is built on:
//
//   parse   every .ets file (Index.ets, sample/**) parsed as ETS with the ArkUI build() syntax
//           enabled for the components the sample uses: no syntax errors;
//   lint    the ArkTS linter (ArkTS 1.1 rules: no any/unknown, explicit return types, typed
//           object literals, ...) over the sample: no errors or warnings;
//   types   the sample type-checked against bindings/napi/index.d.ts (imported as
//           '@edgellm/edgellm'): no error, except names that only the OpenHarmony SDK declares
//           (ArkUI components and decorators, @kit.* modules, getContext): the SDK is not on npm;
//   d.ts    Index.d.ts type-checked on its own, strict.
//
// @ohos-rs/oxk (`oxk format`, an ArkTS parser on oxc) parses the .ets files too, as a second
// parser. Usage: node check-arkts.js (after `npm ci` here). Exits 1 on any finding.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const ts = require('ohos-typescript');

const har = path.resolve(__dirname, '..');
const bindings = path.resolve(har, '..');
const dts = path.join(bindings, 'napi', 'index.d.ts');

function etsFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'tools') out.push(...etsFiles(p));
    else if (e.isFile() && e.name.endsWith('.ets')) out.push(p);
  }
  return out.sort();
}
const files = etsFiles(har);
const sample = files.filter((f) => f.startsWith(path.join(har, 'sample') + path.sep));

// The ArkUI parsing switches of the SDK's ets-loader, limited to the components the sample uses.
const ets = {
  render: { method: ['build', 'pageTransition'], decorator: ['Builder'] },
  components: ['Column', 'Row', 'Text', 'Scroll', 'TextInput', 'Button'],
  extend: { decorator: ['Extend', 'AnimatableExtend'], components: [] },
  styles: { decorator: 'Styles', component: { name: 'Common', type: 'T', instance: 'CommonInstance' },
    property: 'stateStyles' },
  customComponent: 'CustomComponent',
  syntaxComponents: { paramsUICallback: [], attrUICallback: [] },
};
// Only the SDK declares these: "cannot find name" (components, decorators, getContext, console:
// the ArkTS runtime's, not the DOM's), "cannot find module" (@kit.*).
const SDK_ONLY = new Set([2304, 2307, 2584, 2792]);

const findings = [];
const where = (d) => (d.file
  ? `${path.relative(bindings, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '');
const report = (kind, d) => findings.push(`${kind} ${where(d)}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);

// parse
for (const f of files) {
  const sf = ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.ES2017, true, ts.ScriptKind.ETS, { ets });
  for (const d of sf.parseDiagnostics) report('parse', d);
}

// lint + types (one program)
const options = {
  target: ts.ScriptTarget.ES2017, module: ts.ModuleKind.ES2020, strict: true, noEmit: true, skipLibCheck: true,
  experimentalDecorators: true, allowSyntheticDefaultImports: true, lib: ['lib.es2020.d.ts'],
  baseUrl: bindings, paths: { '@edgellm/edgellm': [path.relative(bindings, dts)] }, ets, compatibleSdkVersion: 12,
};
const builder = ts.createEmitAndSemanticDiagnosticsBuilderProgram(sample, options, ts.createIncrementalCompilerHost(options));
for (const d of ts.ArkTSLinter_1_1.runArkTSLinter(builder, undefined, undefined, 'ArkTS_1_1')) report('lint', d);
const program = builder.getProgram();
for (const f of sample) {
  for (const d of program.getSemanticDiagnostics(program.getSourceFile(f))) {
    if (!SDK_ONLY.has(d.code)) report('types', d);
  }
}

// d.ts alone
const dtsOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2020, lib: ['lib.es2020.d.ts'] };
const dtsProgram = ts.createProgram([dts], dtsOptions);
for (const d of ts.getPreEmitDiagnostics(dtsProgram)) report('d.ts', d);

// second parser: oxk formats a copy of each file (it fails on a syntax error)
const oxk = path.join(__dirname, 'node_modules', '.bin', 'oxk');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edgellm-arkts-'));
try {
  for (const f of files) {
    const copy = path.join(tmp, path.basename(f));
    fs.copyFileSync(f, copy);
    const r = spawnSync(oxk, ['format', copy], { encoding: 'utf8' });
    if (r.status !== 0) findings.push(`oxk ${path.relative(bindings, f)}: ${(r.stderr || r.stdout).trim()}`);
    fs.rmSync(copy);
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

for (const f of findings) console.log(`check-arkts: ${f}`);
console.log(`check-arkts: ${files.length} .ets files parsed (ohos-typescript ${ts.version}, oxk), ` +
  `${sample.length} linted (ArkTS 1.1) and type-checked against index.d.ts: ${findings.length} findings`);
process.exit(findings.length ? 1 : 0);
