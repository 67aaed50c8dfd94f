State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
ESTAB 0      0         192.0.2.10:868     192.0.2.2:2049 rto:0.2 ato:0.04 cwnd:10 reordering:0
