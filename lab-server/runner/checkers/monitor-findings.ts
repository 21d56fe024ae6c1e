/** The monitor checks share one judgement of the alerts (monitor-alerts.ts), computed once per grade. */
import { memoize } from './contract.ts';
import { checkMonitorAlerts } from './monitor-alerts.ts';

export const monitorJudgement = memoize((collected) => (collected.monitor ? checkMonitorAlerts(collected.monitor) : null));
