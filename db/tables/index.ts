import type { LearningTables } from './learning';
import type { ManagementTables } from './management';
import type { PlatformTables } from './platform';
import type { WebhookTables } from './webhooks';

export type * from './management';
export type * from './platform';

/** The whole database as Kysely sees it: one interface per aggregate, merged here. */
export interface Database extends PlatformTables, LearningTables, WebhookTables, ManagementTables {}
