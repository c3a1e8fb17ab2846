// Edits pinned modules' built files where the code itself stands in the way of the
// distribution: mostly English that a module writes without a translation key, made
// translatable (and one hard-coded identifier type, see the fast data entry app below).
// Each English text without a key becomes a lookup in the module's translations
// (`window.i18next`, which the app shell sets up and fills with the module's own
// translations and config.json's overrides), with the English as its default. The
// distribution then gives the French through config.json's translation overrides, as for
// any other key.
//
// Each patch names the exact text it replaces and how many times the module's files hold
// it: a module of another version, whose built code differs, fails the build here instead
// of keeping its English silently. Only the files the app shell loads are patched (the
// module's entry and its chunks; `main.js` is the module's standalone bundle, not loaded).
//
// Usage: node patch-modules.mjs <spa folder>
import fs from "node:fs";
import path from "node:path";

const STOCK = "@openmrs/esm-stock-management-app";
const HSU_ID = "05a29f94-c0ed-11e2-94be-8c13b969e334";

/// A lookup of `key` in the module's translations, English by default; `options` adds
/// interpolated values (`{{name}}` in the texts).
function tr(ns, key, english, options = "") {
  return `window.i18next.t(${JSON.stringify(key)},{ns:${JSON.stringify(ns)},defaultValue:${english}${options ? "," + options : ""}})`;
}
const text = (s) => JSON.stringify(s);

export const PATCHES = [
  {
    folder: "openmrs-esm-stock-management-app-3.2.1",
    edits: [
      // The operations page's menu of operation types.
      {
        find: `"Start New\\xa0\\xa0"`,
        replace: `${tr(STOCK, "startNew", text("Start New"))}+"\\xa0\\xa0"`,
        times: 1,
      },
      // The operations table's status column shows the server's status word.
      {
        find: `status:"".concat(null==e?void 0:e.status)`,
        replace: `status:${tr(STOCK, "operationStatus", `"".concat(null==e?void 0:e.status)`, `context:"".concat(null==e?void 0:e.status).toLowerCase()`)}`,
        times: 1,
      },
      // The operations table's filters: their labels are the module's English filter
      // names, and the status filter lists the server's status words.
      {
        find: `label:a,labelInline:!0,items:h,itemToString:function(e){return e?e.display:o("notSet","Not Set")}`,
        replace: `label:${tr(STOCK, "filterName", "a", "context:String(a).toLowerCase()")},labelInline:!0,items:h,itemToString:function(e){return e?${tr(STOCK, "operationStatus", "e.display", "context:String(e.display).toLowerCase()")}:o("notSet","Not Set")}`,
        times: 1,
      },
      {
        find: `placeholder:o("filterBy","Filter by {{filterName}}",{filterName:a})`,
        replace: `placeholder:o("filterBy","Filter by {{filterName}}",{filterName:${tr(STOCK, "filterName", "a", "context:String(a).toLowerCase()")}})`,
        times: 1,
      },
      // A line's availability in the operation form.
      {
        find: `"Available: ",p.toLocaleString()," ",f`,
        replace: `${tr(STOCK, "availableQuantity", text("Available: {{quantity}} {{unit}}"), "quantity:p.toLocaleString(),unit:f")}`,
        times: 1,
      },
      {
        find: `{className:el.outOfStock},"Out of Stock")`,
        replace: `{className:el.outOfStock},${tr(STOCK, "outOfStock", text("Out of Stock"))})`,
        times: 1,
      },
      // The operation form's steps.
      {
        find: `name:"".concat(null==_?void 0:_.name," Details")`,
        replace: `name:"".concat(null==_?void 0:_.name," ",${tr(STOCK, "details", text("Details"))})`,
        times: 1,
      },
      {
        find: `(null==M?void 0:M.requiresDispatchAcknowledgement)?"Submit/Dispatch":"Submit/Complete"`,
        replace: `(null==M?void 0:M.requiresDispatchAcknowledgement)?${tr(STOCK, "submitAndDispatch", text("Submit/Dispatch"))}:${tr(STOCK, "submitAndComplete", text("Submit/Complete"))}`,
        times: 1,
      },
      // A report's grouping, as its parameters describe it.
      {
        find: `null!=(S=null==(C=e.inventoryGroupByName)?void 0:C.trim())?S:"Stock Item Batch Number"`,
        replace: `null!=(S=null==(C=e.inventoryGroupByName)?void 0:C.trim())?S:${tr(STOCK, "stockItemBatchNumber", text("Stock Item Batch Number"))}`,
        times: 1,
      },
      // The reports' names: the app chooses a report's parameters by comparing its English
      // name, so only the names shown are translated, with the name made a context
      // ("Stock-Out Report" → reportTypeName_stock_out_report): in the form's list of
      // reports, and in the list of runs, which shows the name the run was asked under.
      {
        find: `itemToString:function(e){var t,n;return"".concat(null!=(t=null!=(n=null==e?void 0:e.name)?n:null==e?void 0:e.name)?t:"")}`,
        replace: `itemToString:function(e){var t,n,s="".concat(null!=(t=null!=(n=null==e?void 0:e.name)?n:null==e?void 0:e.name)?t:"");return s?${tr(STOCK, "reportTypeName", "s", `context:s.toLowerCase().replace(/[^a-z]+/g,"_")`)}:s}`,
        times: 1,
      },
      {
        find: `report:null==n?void 0:n.description`,
        replace: `report:${tr(STOCK, "reportTypeName", `String((null==n?void 0:n.description)||"")`, `context:String((null==n?void 0:n.description)||"").toLowerCase().replace(/[^a-z]+/g,"_")`)}`,
        times: 1,
      },
      // The confirmation of an action names it by the English word that also chooses the
      // action (`title`): only the words shown are translated.
      ...[
        ["operationSuccessTitle", "{{title}} Operation"],
        ["operationSuccessful", "You have successfully {{title}} operation"],
        ["operationModalTitle", "{{title}} Operation"],
        ["confirmOperation", "Would you really like to {{title}} the operation?"],
      ].map(([key, english]) => ({
        find: `g(${text(key)},${text(english)},{title:n})`,
        replace: `g(${text(key)},${text(english)},{title:${tr(STOCK, "operationAction", "n", `context:String(n).toLowerCase().replace(/ /g,"")`)}})`,
        times: 1,
      })),
    ],
  },
  {
    // The fast data entry app adds a patient to a register or a group only once it has
    // found her identifier of the reference application's "OpenMRS ID" type, whose uuid it
    // writes in its code, and compares that identifier's location with the session's.
    // This distribution numbers patients with a type of its own, whose location is not
    // used: without these edits the app silently adds nobody. The OpenMRS ID is still
    // taken first where a patient holds one; her preferred identifier otherwise, and an
    // identifier without a location is at no other facility.
    folder: "openmrs-esm-fast-data-entry-app-1.5.0",
    edits: [
      {
        find: `l.data.results.find(function(e){return"${HSU_ID}"==e.identifierType.uuid})`,
        replace: `(l.data.results.find(function(e){return"${HSU_ID}"==e.identifierType.uuid})||l.data.results.find(function(e){return e.preferred&&!e.voided}))`,
        times: 1,
      },
      // Adding to a register (the form entry's patient search).
      { find: `n=c.uuid!==d.location.uuid;`, replace: `n=!!d.location&&c.uuid!==d.location.uuid;`, times: 1 },
      // Adding to a group.
      { find: `n=G.uuid!=F.location.uuid;`, replace: `n=!!F.location&&G.uuid!=F.location.uuid;`, times: 1 },
    ],
  },
];

/// Carbon's pagination and table search write English when a module gives them no text,
/// and every module bundles its own copy of Carbon: in every module's files, each of these
/// defaults (as Carbon's ES2015 and ES5 builds write them, whatever the minifier named its
/// variables) becomes a lookup in the app shell's `core` translations. `marker` counts the
/// defaults a file holds: each must be patched.
const CORE = "core";
export const CARBON = [
  {
    marker: /="Items per page:"/g,
    find: /itemsPerPageText:([\w$]+)="Items per page:"/g,
    replace: (_, v) => `itemsPerPageText:${v}=${tr(CORE, "carbonItemsPerPage", text("Items per page:"))}`,
  },
  {
    marker: / of \$\{[\w$]+\} items`/g,
    find: /itemRangeText:([\w$]+)=\(([\w$]+),([\w$]+),([\w$]+)\)=>`\$\{\2\}–\$\{\3\} of \$\{\4\} items`/g,
    replace: (_, v, a, b, c) =>
      `itemRangeText:${v}=(${a},${b},${c})=>${tr(CORE, "carbonItemRange", text("{{min}}–{{max}} of {{total}} items"), `min:${a},max:${b},total:${c}`)}`,
  },
  {
    marker: /–\$\{[\w$]+\} items`/g,
    find: /itemText:([\w$]+)=\(([\w$]+),([\w$]+)\)=>`\$\{\2\}–\$\{\3\} items`/g,
    replace: (_, v, a, b) => `itemText:${v}=(${a},${b})=>${tr(CORE, "carbonItems", text("{{min}}–{{max}} items"), `min:${a},max:${b}`)}`,
  },
  {
    marker: /=\([\w$]+,[\w$]+\)=>`of \$\{/g,
    find: /pageRangeText:([\w$]+)=\(([\w$]+),([\w$]+)\)=>`of \$\{\3\} \$\{1===\3\?"page":"pages"\}`/g,
    replace: (_, v, a, b) =>
      `pageRangeText:${v}=(${a},${b})=>${tr(CORE, "carbonPageRange", `1===${b}?"of {{total}} page":"of {{total}} pages"`, `context:1===${b}?"one":"other",total:${b}`)}`,
  },
  // The same defaults as Carbon's ES5 build writes them (the app shell's copy, which the
  // modules share).
  {
    marker: /\?"Items per page:":/g,
    find: /\?"Items per page:":/g,
    replace: () => `?${tr(CORE, "carbonItemsPerPage", text("Items per page:"))}:`,
  },
  {
    marker: /\.concat\([\w$]+," of "\)\.concat\([\w$]+," items"\)\}/g,
    find: /function\(([\w$]+),([\w$]+),([\w$]+)\)\{return""\.concat\(\1,"–"\)\.concat\(\2," of "\)\.concat\(\3," items"\)\}/g,
    replace: (_, a, b, c) =>
      `function(${a},${b},${c}){return ${tr(CORE, "carbonItemRange", text("{{min}}–{{max}} of {{total}} items"), `min:${a},max:${b},total:${c}`)}}`,
  },
  {
    marker: /"–"\)\.concat\([\w$]+," items"\)\}/g,
    find: /function\(([\w$]+),([\w$]+)\)\{return""\.concat\(\1,"–"\)\.concat\(\2," items"\)\}/g,
    replace: (_, a, b) => `function(${a},${b}){return ${tr(CORE, "carbonItems", text("{{min}}–{{max}} items"), `min:${a},max:${b}`)}}`,
  },
  {
    marker: /return"of "\.concat\(/g,
    find: /function\(([\w$]+),([\w$]+)\)\{return"of "\.concat\(\2," "\)\.concat\(1===\2\?"page":"pages"\)\}/g,
    replace: (_, a, b) =>
      `function(${a},${b}){return ${tr(CORE, "carbonPageRange", `1===${b}?"of {{total}} page":"of {{total}} pages"`, `context:1===${b}?"one":"other",total:${b}`)}}`,
  },
  {
    marker: /"carbon\.table\.toolbar\.search\.placeholder","Filter table"\)/g,
    find: /("carbon\.table\.toolbar\.search\.placeholder","Filter table"\)),([\w$]+)\),([\w$]+)=function\(([\w$]+)\)\{return ([\w$]+)\[\4\]\}/g,
    replace: (_, tail, obj, f, id, t) => `${tail},${obj}),${f}=function(${id}){return ${tr(CORE, "carbonFilterTable", `${t}[${id}]`)}}`,
  },
  // The page select's hidden label, in its three forms.
  {
    marker: /Page of (?:"\.concat|\$\{)/g,
    find: /function\(([\w$]+)\)\{return"Page of "\.concat\(\1," "\)\.concat\(1===\1\?"page":"pages"\)\}|=([\w$]+)=>`Page of \$\{\2\} \$\{1===\2\?"page":"pages"\}`|labelText:`Page of \$\{([\w$]+)\} pages`/g,
    replace: (_, a, b, c) => {
      const n = a ?? b ?? c;
      const lookup = tr(CORE, "carbonPageOf", `1===${n}?"Page of {{page}} page":"Page of {{page}} pages"`, `context:1===${n}?"one":"other",page:${n}`);
      if (a) return `function(${n}){return ${lookup}}`;
      if (b) return `=${n}=>${lookup}`;
      return `labelText:${lookup}`;
    },
  },
  // The table's batch actions bar ("Cancel", "3 items selected", "Select all (4)"), as
  // the ES2015 copies write it, then as the app shell's ES5 copy does.
  {
    marker: /"carbon\.table\.batch\.cancel"===/g,
    find: /\(([\w$]+),\{totalSelected:([\w$]+),totalCount:([\w$]+)\}=\{totalSelected:0,totalCount:0\}\)=>"carbon\.table\.batch\.cancel"===\1\?([\w$]+)\[\1\]:"carbon\.table\.batch\.selectAll"===\1\?`\$\{\4\[\1\]\} \(\$\{\3\}\)`:`\$\{\2\} \$\{\4\[\1\]\}`/g,
    replace: (_, id, selected, total, table) =>
      `(${id},{totalSelected:${selected},totalCount:${total}}={totalSelected:0,totalCount:0})=>` +
      `"carbon.table.batch.cancel"===${id}?${tr(CORE, "carbonCancel", `${table}[${id}]`)}:` +
      `"carbon.table.batch.selectAll"===${id}?${tr(CORE, "carbonSelectAll", `\`\${${table}[${id}]} (\${${total}})\``, `total:${total}`)}:` +
      `${tr(CORE, "carbonSelected", `\`\${${selected}} \${${table}[${id}]}\``, `count:${selected}`)}`,
  },
  {
    shellOnly: true,
    marker: /"carbon\.table\.batch\.cancel",/g,
    find: /switch\(([\w$]+)\)\{case ([\w$]+):return ([\w$]+)\[\1\];case ([\w$]+):return""\.concat\(\3\[\1\]," \("\)\.concat\(([\w$]+),"\)"\);case ([\w$]+):case ([\w$]+):return""\.concat\(([\w$]+)," "\)\.concat\(\3\[\1\]\)\}/g,
    replace: (_, id, cancel, table, selectAll, total, many, one, selected) =>
      `switch(${id}){case ${cancel}:return ${tr(CORE, "carbonCancel", `${table}[${id}]`)};` +
      `case ${selectAll}:return ${tr(CORE, "carbonSelectAll", `"".concat(${table}[${id}]," (").concat(${total},")")`, `total:${total}`)};` +
      `case ${many}:case ${one}:return ${tr(CORE, "carbonSelected", `"".concat(${selected}," ").concat(${table}[${id}])`, `count:${selected}`)}}`,
  },
  {
    marker: /"carbon\.table\.toolbar\.search\.label":"Filter table"/g,
    find: /(\{"carbon\.table\.toolbar\.search\.label":"Filter table","carbon\.table\.toolbar\.search\.placeholder":"Filter table"\}),([\w$]+)=([\w$]+)=>([\w$]+)\[\3\]/g,
    replace: (_, table, f, id, t) => `${table},${f}=${id}=>${tr(CORE, "carbonFilterTable", `${t}[${id}]`)}`,
  },
];

/// Patches Carbon's English defaults in the app shell's files and every module folder of
/// the spa; throws when a file holds a default its pattern does not match.
export function patchCarbon(spa) {
  let patched = 0;
  // The app shell's own files, then each module's.
  const files = fs.readdirSync(spa, { withFileTypes: true }).flatMap((d) => {
    if (d.isFile()) return d.name.endsWith(".js") ? [[".", d.name]] : [];
    if (!d.isDirectory()) return [];
    return fs
      .readdirSync(path.join(spa, d.name))
      .filter((f) => f.endsWith(".js") && f !== "main.js")
      .map((f) => [d.name, f]);
  });
  for (const [folder, f] of files) {
    {
      const d = { name: folder };
      const file = path.join(spa, folder, f);
      let c = fs.readFileSync(file, "utf8");
      let changed = false;
      for (const { marker, find, replace, shellOnly } of CARBON) {
        if (shellOnly && folder !== ".") continue;
        const expected = (c.match(marker) || []).length;
        if (expected === 0) continue;
        let found = 0;
        c = c.replace(find, (...m) => {
          found++;
          return replace(...m);
        });
        if (found !== expected) {
          throw new Error(`patch-modules: ${d.name}/${f}: ${expected} of Carbon's ${marker} defaults, ${found} patched`);
        }
        patched += found;
        changed = true;
      }
      if (changed) fs.writeFileSync(file, c);
    }
  }
  return patched;
}

/// Applies every patch to the spa folder; throws when a text is not found as often as
/// the patch says.
export function patchModules(spa) {
  for (const { folder, edits } of PATCHES) {
    const dir = path.join(spa, folder);
    if (!fs.existsSync(dir)) throw new Error(`patch-modules: ${folder} is not in ${spa}`);
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".js") && f !== "main.js")
      .map((f) => path.join(dir, f));
    const contents = new Map(files.map((f) => [f, fs.readFileSync(f, "utf8")]));
    for (const { find, replace, times } of edits) {
      let found = 0;
      for (const [f, c] of contents) {
        const parts = c.split(find);
        if (parts.length > 1) {
          found += parts.length - 1;
          contents.set(f, parts.join(replace));
        }
      }
      if (found !== times) {
        throw new Error(`patch-modules: ${folder}: found ${found} times, expected ${times}: ${find}`);
      }
    }
    for (const [f, c] of contents) fs.writeFileSync(f, c);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const spa = process.argv[2];
  if (!spa) {
    console.error("usage: node patch-modules.mjs <spa folder>");
    process.exit(2);
  }
  patchModules(spa);
  const carbon = patchCarbon(spa);
  console.log(`patched ${PATCHES.reduce((n, p) => n + p.edits.length, 0)} texts in ${PATCHES.length} module(s), and ${carbon} of Carbon's English defaults`);
}
