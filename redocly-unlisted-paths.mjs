/**
 * A Redocly plugin (redocly.yaml): `x-unlisted-paths` of openapi.yaml (GET /{resource}, kept out of
 * `paths` for client generators) is read as paths are, so the components it uses count as used and
 * its parameters and responses are linted. Its operation gets a type of its own, so that the rules
 * written for callable operations (a 2xx answer, tags…) pass it by: it only ever answers 404.
 */
export default function unlistedPathsPlugin() {
  return {
    id: 'unlisted-paths',
    typeExtension: {
      oas3(types) {
        const operations = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
        return {
          ...types,
          Root: { ...types.Root, properties: { ...types.Root.properties, 'x-unlisted-paths': 'UnlistedPaths' } },
          UnlistedPaths: { properties: {}, additionalProperties: (_value, key) => (key.startsWith('/') ? 'UnlistedPathItem' : undefined) },
          UnlistedPathItem: {
            ...types.PathItem,
            properties: { ...types.PathItem.properties, ...Object.fromEntries(operations.map((method) => [method, 'UnlistedOperation'])) },
          },
          UnlistedOperation: types.Operation,
        };
      },
    },
  };
}
