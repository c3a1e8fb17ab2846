// The O3 framework's build configuration for a front-end module (module federation with
// the application shell's shared libraries), from the pinned `openmrs` package. Its
// TypeScript checker is left out: the front end's pinned packages do not carry React's
// type definitions, so it could only report their absence.
const config = require('openmrs/default-rspack-config');

module.exports = (env, argv) => {
  const built = config(env, argv);
  built.plugins = built.plugins.filter((p) => p.constructor.name !== 'TsCheckerRspackPlugin');
  return built;
};
